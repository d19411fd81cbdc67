"""Plain YAML reading: ``params.yaml``, resource files, ``dvc.lock``.

No validation and no knowledge of the parameters' meaning (that is
:mod:`hatecheck_pipeline.core.config`, the loader): a stage that reads a
YAML resource imports this module, not the loader, so an edit to the
loader's checks re-runs no stage.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

# YAML 1.2's plain floats that YAML 1.1 (PyYAML) reads as strings: an
# exponent without a dot (``3e-05``, ``1E5``), as DVC writes a float into
# params.yaml (`dvc exp run -S`, `dvc params modify`) and dvc.lock.
_EXPONENT_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$")


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's C parser where it is built), reading
    YAML 1.2's exponent floats as floats."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def read_yaml(path: str | Path) -> Any:
    r"""A YAML file, parsed safely (libyaml's C loader where it is built:
    a whole report's dvc.lock is ~0.5 MB), a plain ``3e-05`` a float as
    DVC means it.

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as fh:
    ...     _ = fh.write('lr: 3e-05\nquoted: "3e-05"\nold: 5.0e-5\n')
    >>> read_yaml(fh.name)
    {'lr': 3e-05, 'quoted': '3e-05', 'old': 5e-05}
    """
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_Loader)


def with_yaml12_floats(tree: Any, reference: Any) -> Any:
    """``tree`` (Snakemake's parse of params.yaml, YAML 1.1: ``3e-05`` a
    string) with each string that ``reference`` (the same file read by
    :func:`read_yaml`) holds as that float at the same place made the float;
    every other value, overrides included, as it is.

    >>> with_yaml12_floats({"lr": "3e-05", "name": "x", "n": [1, "2e3"]}, {"lr": 3e-05, "name": "x", "n": [1, 2000.0]})
    {'lr': 3e-05, 'name': 'x', 'n': [1, 2000.0]}
    """
    if isinstance(tree, dict) and isinstance(reference, dict):
        return {k: with_yaml12_floats(v, reference.get(k)) for k, v in tree.items()}
    if isinstance(tree, list) and isinstance(reference, list) and len(tree) == len(reference):
        return [with_yaml12_floats(v, r) for v, r in zip(tree, reference)]
    if isinstance(tree, str) and isinstance(reference, float) and _EXPONENT_FLOAT.match(tree) and float(tree) == reference:
        return reference
    return tree


def read_dvc_yaml(path: str | Path) -> Any:
    """A YAML file as DVC reads and writes it: ruamel.yaml's safe loader,
    YAML 1.2 rules (DVC's own parser, C-accelerated by ruamel.yaml.clib).
    For ``dvc.lock``: DVC writes ``5.0e-5`` as ``5e-05``, a float in YAML 1.2
    but a string under the YAML 1.1 rules of :func:`read_yaml`."""
    from ruamel.yaml import YAML

    with open(path, encoding="utf-8") as fh:
        return YAML(typ="safe").load(fh)
