"""The papers' published numbers and functional-test names, and the check
that a metrics file reproduces them.

``resources/published.yaml`` holds the papers' tables (table -> model -> row
-> column -> value, percent); ``resources/functionalities.yaml`` the papers'
F1..F29 (HateCheck) / F1..F34 (MHC) numbering. :func:`compare` lines a
``score`` metrics file up with every published cell it can be compared with:
``hatecheck-pipeline compare --metrics M.json --model Perspective`` says
whether scoring a third party's predictions reproduces the paper.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from typing import Any, Mapping

import polars as pl
import yaml


def _resource(name: str) -> Any:
    return yaml.safe_load(resources.files("hatecheck_pipeline").joinpath(f"resources/{name}").read_text("utf-8"))


@cache
def load() -> dict[str, Any]:
    """The published tables."""
    return _resource("published.yaml")


@cache
def functionalities(dataset: str) -> dict[str, tuple[int, str]]:
    """code -> (number i of ``F<i>``, description) in the paper's order for
    ``hatecheck`` or ``mhc``; other datasets (expanded suites reuse the
    codes) get the HateCheck numbering, then MHC's for codes HateCheck lacks.

    >>> functionalities("hatecheck")["derog_neg_emote_h"]
    (1, 'Expression of strong negative emotions (explicit)')
    >>> functionalities("mhc")["spell_pinyin_h"][0], functionalities("hatecheck")["spell_leet_h"][0]
    (34, 29)
    """
    table = _resource("functionalities.yaml")
    if dataset not in table:
        return {**functionalities("mhc"), **functionalities("hatecheck")}
    return {code: (i, text) for i, (code, text) in enumerate(table[dataset], start=1)}


def functionality_label(code: str, dataset: str, short: bool = False) -> str:
    """``F<i> <description> (code)`` as the report's row header (``short``:
    ``F<i> code``, for plot axes); an unknown code is returned as is.

    >>> functionality_label("slur_reclaimed_nh", "hatecheck")
    'F9 Reclaimed slurs (slur_reclaimed_nh)'
    >>> functionality_label("slur_reclaimed_nh", "hatecheck", short=True), functionality_label("made_up_h", "hatecheck")
    ('F9 slur_reclaimed_nh', 'made_up_h')
    """
    known = functionalities(dataset).get(code)
    if not known:
        return code
    return f"F{known[0]} {code}" if short else f"F{known[0]} {known[1]} ({code})"


def functionality_order(code: str, dataset: str) -> int:
    """Sort key: the paper's F number (unknown codes last)."""
    known = functionalities(dataset).get(code)
    return known[0] if known else 10_000


def source_of(table: str, model: str, published: Mapping[str, Any] | None = None) -> str:
    """Where a model's figures of a published table come from: the table's
    ``source``, or the model's own under ``sources`` (a row the paper
    printed elsewhere, e.g. Perspective's MHC figures, Table 8, kept in
    Table 2's place: the same columns)."""
    entry = (load() if published is None else published).get(table, {})
    return (entry.get("sources") or {}).get(model) or entry.get("source", "")


def lookup(table: str, model: str, published: Mapping[str, Any] | None = None) -> dict[tuple[str, str], tuple[float, str, str]]:
    """(row, column) -> (value, table, source) for one model of a published table."""
    entry = (load() if published is None else published).get(table, {})
    source = source_of(table, model, published)
    return {
        (str(row), str(col)): (value, table, source)
        for row, cols in entry.get("values", {}).get(model, {}).items()
        for col, value in cols.items()
    }


def _figure(section: Mapping[str, Any], key: str, metric: str) -> float | None:
    fig = section.get(key, {}).get(metric)
    return fig.get("value") if isinstance(fig, Mapping) else fig


def ours(metrics: Mapping[str, Any]) -> dict[str, dict[tuple[str, str], tuple[float | None, int | None]]]:
    """The cells of the papers' tables a metrics file holds, keyed like
    published.yaml: table -> (row, column) -> (value, n)."""
    dataset, language = metrics.get("dataset"), metrics.get("language")
    overall = metrics.get("overall", {})

    def cells(section: str, metric: str, column: str | None = None) -> dict:
        groups = metrics.get(section, {})
        return {(str(key), column or metric): (_figure(groups, key, metric), groups[key].get("n")) for key in groups}

    if dataset == "hatecheck":
        t2 = cells("by_label", "accuracy")
        t2[("total", "accuracy")] = (_figure(metrics, "overall", "accuracy"), overall.get("n"))
        return {
            "hatecheck_t1": cells("by_functionality", "accuracy"),
            "hatecheck_t2": t2,
            "hatecheck_t3": cells("by_reclaimed_slur", "accuracy"),
            "hatecheck_t4": cells("by_target", "accuracy"),
        }
    if dataset == "mhc" and language:
        t2 = {(language, m): (_figure(metrics, "overall", m), overall.get("n")) for m in ("f1_hateful", "f1_non_hateful", "macro_f1")}
        return {
            "mhc_t1": cells("by_functionality", "accuracy", column=language),
            "mhc_t2": t2,
            "mhc_t3": {(row, language): v for (row, _), v in cells("by_target", "macro_f1").items()},
            "mhc_t7": {(language, "macro_f1"): t2[(language, "macro_f1")]},
        }
    return {}


def compare(metrics: Mapping[str, Any], model: str, published: Mapping[str, Any] | None = None, tolerance: float = 0.05) -> pl.DataFrame:
    """One row per published cell of ``model`` that ``metrics`` can be
    compared with: table, row, column, ours, paper, difference, match
    (|difference| <= ``tolerance``, i.e. equal at the papers' one decimal).
    A published cell the metrics file lacks has ``ours`` null and no match."""
    published = load() if published is None else published
    rows = []
    for table, cells in ours(metrics).items():
        pub = lookup(table, model, published)
        if table == "mhc_t1" or table == "mhc_t3":  # only this file's language column
            pub = {k: v for k, v in pub.items() if k[1] == metrics.get("language")}
        if table == "mhc_t2" or table == "mhc_t7":
            pub = {k: v for k, v in pub.items() if k[0] == metrics.get("language")}
        for (row, col), (paper, _, source) in pub.items():
            value, n = cells.get((row, col), (None, None))
            diff = None if value is None else round(value - paper, 1)
            rows.append(
                {
                    "table": table,
                    "row": row,
                    "column": col,
                    "n": n,
                    "ours": value,
                    "paper": paper,
                    "difference": diff,
                    "match": diff is not None and abs(diff) <= tolerance,
                    "source": source,
                }
            )
    schema = {
        "table": pl.String,
        "row": pl.String,
        "column": pl.String,
        "n": pl.Int64,
        "ours": pl.Float64,
        "paper": pl.Float64,
        "difference": pl.Float64,
        "match": pl.Boolean,
        "source": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)


def published_models(published: Mapping[str, Any] | None = None) -> list[str]:
    """Every model with a published figure."""
    published = load() if published is None else published
    return sorted({m for entry in published.values() for m in entry.get("values", {})})
