"""The HateCheck and MHC papers' tables (HateCheck Tables 1-4 and held-out
macro F1; MHC Tables 1, 2, 3, 6 and 7) and the contrast-pair table, built
from the functional suites' (and held-out sets') METRICS.json files.
"""

from __future__ import annotations

import polars as pl

from hatecheck_pipeline.evaluation.cells import Source, _cell, boot, frame, overall_cells, section_cells


def hatecheck_tables(loaded: list[tuple[Source, dict]]) -> dict[str, pl.DataFrame]:
    """HateCheck Tables 1-4 and held-out macro F1 for models tested on HateCheck."""
    hc = [(s, d) for s, d in loaded if s.dataset == "hatecheck"]
    held = [(s, d) for s, d in loaded if s.heldout]
    t2 = []
    for src, doc in hc:
        for label, figures in doc["by_label"].items():
            t2.append(_cell("hatecheck_t2", src, label, "accuracy", figures["accuracy"], figures["n"], **boot(doc, figures)))
        t2.append(
            _cell("hatecheck_t2", src, "total", "accuracy", doc["overall"]["accuracy"], doc["overall"]["n"], **boot(doc, doc["overall"]))
        )
    return {
        "hatecheck_t1": section_cells("hatecheck_t1", hc, "by_functionality", "accuracy"),
        "hatecheck_t2": frame(t2),
        "hatecheck_t3": section_cells("hatecheck_t3", hc, "by_reclaimed_slur", "accuracy"),
        "hatecheck_t4": section_cells("hatecheck_t4", hc, "by_target", "accuracy"),
        "hatecheck_heldout": overall_cells("hatecheck_heldout", held, ["macro_f1"], row_of=lambda s: s.dataset),
    }


def mhc_tables(loaded: list[tuple[Source, dict]]) -> dict[str, pl.DataFrame]:
    """MHC Tables 1, 2, 3, 6 and 7 for models tested on MHC."""
    mhc = [(s, d) for s, d in loaded if s.dataset == "mhc"]
    held = [(s, d) for s, d in loaded if s.heldout]
    t1 = section_cells("mhc_t1", mhc, "by_functionality", "accuracy")
    t3 = section_cells("mhc_t3", mhc, "by_target", "macro_f1")
    # rows are functionalities/targets, columns languages
    t1 = t1.with_columns(pl.col("language").alias("column"))
    t3 = t3.with_columns(pl.col("language").alias("column"))
    return {
        "mhc_t1": t1,
        "mhc_t2": overall_cells("mhc_t2", mhc, ["f1_hateful", "f1_non_hateful", "macro_f1"]),
        "mhc_t3": t3,
        "mhc_t6": overall_cells("mhc_t6", held, ["macro_f1"], row_of=lambda s: s.dataset),
        "mhc_t7": overall_cells("mhc_t7", mhc, ["macro_f1"]),
    }


def contrast_table(loaded: list[tuple[Source, dict]]) -> pl.DataFrame:
    """Share of contrast pairs with both cases right, per (model, suite)."""
    return frame(
        _cell(
            "contrast",
            s,
            s.suite,
            "both_correct",
            d["contrast"]["both_correct"],
            d["contrast"]["n_pairs"],
            per_language=False,
            **boot(d, d["contrast"]),
        )
        for s, d in loaded
        if "contrast" in d
    )
