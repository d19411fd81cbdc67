"""Registry of evaluation suites: every suite a model is evaluated on, with
its kind and origin as data (never parsed back out of its name).

- kind ``heldout``: a training dataset's test split (``heldout_<dataset>``);
- kind ``functional``: HateCheck (``hatecheck``) or one MHC language
  (``mhc_<language>``);
- kind ``expanded``: a suite built by the expand phase (perturbed,
  extended with new terms, LLM-generated), read from ``data/expanded``;
  ``source`` names the functional dataset it expands.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import polars as pl

from hatecheck_pipeline.core import paths

HELDOUT, FUNCTIONAL, EXPANDED = "heldout", "functional", "expanded"
HELDOUT_PREFIX = "heldout_"
EXPANDED_GROUPS = ("perturbed_hatecheck", "perturbed_mhc", "extended", "gpt_hatecheck")


@dataclass(frozen=True)
class Suite:
    name: str
    dataset: str  # the table the cases come from (a dataset, or an expanded table)
    id_column: str  # the suite's own id column name in user-facing files
    kind: str = FUNCTIONAL  # heldout | functional | expanded
    language: str | None = None  # filter on `language`
    split: str | None = None  # filter on `split`
    source: str | None = None  # functional dataset an expanded suite derives from

    @property
    def expanded(self) -> bool:
        return self.kind == EXPANDED

    @property
    def functional(self) -> bool:
        return self.kind == FUNCTIONAL

    @property
    def heldout(self) -> bool:
        return self.kind == HELDOUT

    def table(self, scheme: str) -> str:
        """The preprocessed table a model reads."""
        return paths.expanded_processed(self.dataset, scheme) if self.expanded else paths.processed(self.dataset, scheme)

    def raw_table(self) -> str:
        """The table before any text scheme (gold labels; a score stage's input)."""
        return paths.expanded_table(self.dataset) if self.expanded else paths.interim_table(self.dataset)

    def select(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        """The suite's rows of a table (language and split filters)."""
        if self.language:
            frame = frame.filter(pl.col("language") == self.language)
        if self.split:
            frame = frame.filter(pl.col("split") == self.split)
        return frame

    def load(self, scheme: str, table: str | None = None) -> pl.LazyFrame:
        """The suite's cases with ``text`` preprocessed by ``scheme``."""
        return self.select(pl.scan_parquet(table or self.table(scheme)))

    def load_raw(self, table: str | None = None) -> pl.LazyFrame:
        """The suite's cases before any text scheme (validated table)."""
        return self.select(pl.scan_parquet(table or self.raw_table()))


def heldout(dataset: str) -> Suite:
    return Suite(f"heldout_{dataset}", dataset, "id", HELDOUT, split="test")


def hatecheck() -> Suite:
    return Suite("hatecheck", "hatecheck", "case_id", FUNCTIONAL)


def mhc(language: str) -> Suite:
    return Suite(f"mhc_{language}", "mhc", "mhc_case_id", FUNCTIONAL, language=language)


def perturbed_tables(params: Mapping[str, Any]) -> list[str]:
    """Names of the perturbed tables the expand phase writes."""
    exp = params["expansion"]["perturb"]
    out = ["perturbed_hatecheck"] if "hatecheck" in exp["suites"] else []
    if "mhc" in exp["suites"]:
        out += [f"perturbed_mhc_{lang}" for lang in params["datasets"]["mhc"]["languages"]]
    return out


def expanded_group(name: str, params: Mapping[str, Any]) -> list[Suite]:
    """The suites of one expanded group (empty when it is not configured)."""
    if "expansion" not in params:
        return []
    exp = params["expansion"]
    if name == "perturbed_hatecheck":
        return [Suite(t, t, "id", EXPANDED, source="hatecheck") for t in perturbed_tables(params) if t == name]
    if name == "perturbed_mhc":
        return [Suite(t, t, "id", EXPANDED, source="mhc") for t in perturbed_tables(params) if t.startswith("perturbed_mhc_")]
    if name == "extended":
        langs = exp["templates"]["new_terms_languages"] if exp["templates"]["new_terms"] else []
        return [Suite(f"extended_{lang}", "extended", "id", EXPANDED, language=lang, source="mhc") for lang in langs]
    if name == "gpt_hatecheck":
        langs = exp["llm"]["languages"] if exp["llm"]["enabled"] else []
        return [Suite(f"gpt_hatecheck_{lang}", f"gpt_hatecheck_{lang}", "id", EXPANDED, source="hatecheck") for lang in langs]
    raise KeyError(name)


def expand(name: str, params: Mapping[str, Any]) -> list[Suite]:
    """Suites named by a model's ``suites`` entry."""
    if name == "hatecheck":
        return [hatecheck()]
    if name.startswith(HELDOUT_PREFIX):  # a classifier trained elsewhere, tested on a held-out set
        return [heldout(name[len(HELDOUT_PREFIX) :])]
    if name == "mhc":
        return [mhc(lang) for lang in params["datasets"]["mhc"]["languages"]]
    if name in EXPANDED_GROUPS:
        return expanded_group(name, params)
    for suite in all_suites(params):
        if suite.name == name:
            return [suite]
    raise KeyError(f"unknown suite {name!r}: use hatecheck, mhc, mhc_<language>, {', '.join(EXPANDED_GROUPS)} or a suite name")


def all_suites(params: Mapping[str, Any]) -> list[Suite]:
    """Every suite the configuration defines (held-out sets of every model's
    training data, HateCheck, every MHC language, every expanded suite)."""
    held = {d for m in params["models"].values() for d in m.get("train", [])}  # an llm model trains on nothing
    held |= {s[len(HELDOUT_PREFIX) :] for m in params["models"].values() for s in m.get("suites", []) if s.startswith(HELDOUT_PREFIX)}
    out = [heldout(d) for d in sorted(held)] + [hatecheck()]
    out += [mhc(lang) for lang in params["datasets"]["mhc"]["languages"]]
    out += [s for g in EXPANDED_GROUPS for s in expanded_group(g, params)]
    return out


def suites_for_model(params: Mapping[str, Any], model: str) -> list[Suite]:
    """Every suite a model is evaluated on: held-out test splits, then suites."""
    spec = params["models"][model]
    out = [heldout(d) for d in spec.get("train", [])]
    for name in spec["suites"]:
        out.extend(expand(name, params))
    return out


def suite_groups(params: Mapping[str, Any], model: str) -> list[tuple[str, list[Suite]]]:
    """A model's suites grouped as its ``suites`` entries name them (each
    held-out set alone, ``hatecheck``, ``mhc`` = every MHC language,
    ``perturbed_mhc``, ...), empty groups left out: one predict stage each.
    The suites, in order, are those of :func:`suites_for_model`."""
    spec = params["models"][model]
    groups = [(f"heldout_{d}", [heldout(d)]) for d in spec.get("train", [])]
    groups += [(name, expand(name, params)) for name in spec["suites"]]
    return [(name, suites) for name, suites in groups if suites]


def by_name(params: Mapping[str, Any], name: str) -> Suite:
    for suite in all_suites(params):
        if suite.name == name:
            return suite
    raise KeyError(f"unknown suite {name!r}")
