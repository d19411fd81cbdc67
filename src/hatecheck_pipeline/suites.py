"""Registry of evaluation suites: name -> processed table, filter, id column.

Suite names are path-safe: ``hatecheck``, ``mhc_<language>`` (one per MHC
language), ``heldout_<dataset>`` (a training dataset's test split). Later
issues (expansion) register more suites through :data:`EXTRA_SUITES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import polars as pl

from . import paths


@dataclass(frozen=True)
class Suite:
    name: str
    dataset: str  # processed dataset the cases come from
    id_column: str  # the suite's own id column name in user-facing files
    language: str | None = None  # filter on `language`
    split: str | None = None  # filter on `split`

    def table(self, scheme: str) -> str:
        return paths.processed(self.dataset, scheme)

    def select(self, frame: pl.LazyFrame) -> pl.LazyFrame:
        """The suite's rows of a table (language and split filters)."""
        if self.language:
            frame = frame.filter(pl.col("language") == self.language)
        if self.split:
            frame = frame.filter(pl.col("split") == self.split)
        return frame

    def load(self, scheme: str) -> pl.LazyFrame:
        """The suite's cases with ``text`` preprocessed by ``scheme``."""
        return self.select(pl.scan_parquet(self.table(scheme)))

    def raw_table(self) -> str:
        """The file :meth:`load_raw` reads (a score stage's dependency)."""
        return paths.interim_table(self.dataset)

    def load_raw(self) -> pl.LazyFrame:
        """The suite's cases before any text scheme (validated table)."""
        return self.select(pl.scan_parquet(self.raw_table()))


# name -> builder(params) -> list of suites; expansion registers more here.
EXTRA_SUITES: dict[str, Callable[[Mapping[str, Any]], list[Suite]]] = {}


def expand(name: str, params: Mapping[str, Any]) -> list[Suite]:
    """Suites named by a model's ``suites`` entry."""
    if name == "hatecheck":
        return [Suite("hatecheck", "hatecheck", "case_id")]
    if name == "mhc":
        return [Suite(f"mhc_{lang}", "mhc", "mhc_case_id", language=lang) for lang in params["datasets"]["mhc"]["languages"]]
    if name.startswith("mhc_"):
        return [Suite(name, "mhc", "mhc_case_id", language=name[4:])]
    if name in EXTRA_SUITES:
        return EXTRA_SUITES[name](params)
    raise KeyError(f"unknown suite {name!r}: use hatecheck, mhc, mhc_<language> or a registered suite")


def heldout(dataset: str) -> Suite:
    return Suite(f"heldout_{dataset}", dataset, "id", split="test")


def suites_for_model(params: Mapping[str, Any], model: str) -> list[Suite]:
    """Every suite a model is evaluated on: held-out test splits, then suites."""
    spec = params["models"][model]
    out = [heldout(d) for d in spec["train"]]
    for name in spec["suites"]:
        out.extend(expand(name, params))
    return out


def by_name(params: Mapping[str, Any], name: str) -> Suite:
    if name.startswith("heldout_"):
        return heldout(name[len("heldout_"):])
    if name == "hatecheck" or name.startswith("mhc_"):
        return expand(name, params)[0]
    for builder in EXTRA_SUITES.values():
        for suite in builder(params):
            if suite.name == name:
                return suite
    raise KeyError(f"unknown suite {name!r}")


# Expanded suites (issue 5): perturbed_hatecheck, perturbed_mhc (->
# perturbed_mhc_<language>), extended (-> extended_<language>), gpt_hatecheck
# (-> gpt_hatecheck_<language>); they read data/expanded/<table>/<scheme>.parquet.
def _expanded(name: str) -> Callable[[Mapping[str, Any]], list[Suite]]:
    def build(params: Mapping[str, Any]) -> list[Suite]:
        from .expansion.registry import tables  # lazy: registry subclasses Suite

        return tables(params)[name] if "expansion" in params else []

    return build


for _name in ("perturbed_hatecheck", "perturbed_mhc", "extended", "gpt_hatecheck"):
    EXTRA_SUITES[_name] = _expanded(_name)
