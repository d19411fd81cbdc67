"""The one reading of the suites a command is given.

Every command that takes suites takes them the same way: ``--suite`` and
``--suites`` are one option, repeatable and comma-separated, so
``--suites hatecheck,mhc:german``, ``--suite hatecheck --suite mhc:german``
and ``--suite hatecheck,mhc:german`` give the same list (:func:`split`, the
option's callback). A name is ``hatecheck``, ``mhc:all`` (every MHC
language), ``mhc:<language>`` or a registered suite name; ``evaluate``
also takes ``heldout_<dataset>`` and the expanded suite groups, which its
model's ``suites`` entry names (:func:`model_entries`); ``score`` and
``export`` resolve the names to suites (:func:`resolve`).
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

import typer

NAMES = "hatecheck, mhc:all, mhc:<language> or a registered suite name"


def split(values: Iterable[str]) -> list[str]:
    """The names in repeated, comma-separated values, in order, each once.

    >>> split(["hatecheck,mhc:german", " mhc:german ", "mhc:all,"])
    ['hatecheck', 'mhc:german', 'mhc:all']
    """
    names = (name.strip() for value in values for name in value.split(","))
    return list(dict.fromkeys(name for name in names if name))


def _parsed(values: list[str] | None) -> list[str] | None:
    if values is None:
        return None
    names = split(values)
    if not names:
        raise typer.BadParameter("no suite named")
    return names


def _parsed_one(values: list[str] | None) -> list[str] | None:
    names = _parsed(values)
    if names is not None and len(names) > 1:
        raise typer.BadParameter(f"one suite, not {len(names)} ({', '.join(names)})")
    return names


def option(help: str, several: bool = True) -> Any:
    """``--suite`` / ``--suites``: a list of suite names parsed by
    :func:`split` (``several=False``: a command that takes one suite, the
    same option, a list of one name)."""
    return typer.Option(
        "--suite",
        "--suites",
        metavar="SUITES" if several else "SUITE",
        callback=_parsed if several else _parsed_one,
        help=f"{help} (repeat the option or separate names with commas)" if several else help,
    )


def model_entries(names: Iterable[str]) -> list[str]:
    """Suite names as a model's ``suites`` entries (``mhc:all`` is ``mhc``,
    ``mhc:<language>`` is ``mhc_<language>``; the rest as given).

    >>> model_entries(["hatecheck", "mhc:all", "mhc:german", "heldout_davidson2017"])
    ['hatecheck', 'mhc', 'mhc_german', 'heldout_davidson2017']
    """
    out = []
    for name in names:
        if name == "mhc:all":
            out.append("mhc")
        elif name.startswith("mhc:"):
            out.append("mhc_" + name[len("mhc:") :])
        else:
            out.append(name)
    return out


def resolve(names: Iterable[str], params: Mapping[str, Any]) -> list:
    """Suite names as suites (``mhc:all``: every MHC language of the
    configuration), each once; an unknown name raises ScoringError."""
    from hatecheck_pipeline.evaluation import scoring

    out = []
    for name in names:
        if name == "mhc:all":
            out += [scoring.resolve_suite(f"mhc:{lang}", params) for lang in params["datasets"]["mhc"]["languages"]]
        else:
            out.append(scoring.resolve_suite(name, params))
    return list({s.name: s for s in out}.values())
