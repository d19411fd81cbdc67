"""Undefined figures (a zero denominator) in the tables and the report: null
with the reason, shown as n/a, left out of means (which say so)."""

from __future__ import annotations

import re

import numpy as np

from hatecheck_pipeline.evaluation import metrics
from hatecheck_pipeline.evaluation.cells import Source, overall_cells
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation.shot_tables import shot_tables
from hatecheck_pipeline.report.cells import pivot, td


def source(language: str) -> Source:
    return Source("M", f"mhc_{language}", "mhc", language, f"results/M/mhc_{language}/metrics.json", f"score_M_mhc_{language}")


def doc(gold: np.ndarray, pred: np.ndarray) -> dict:
    return {
        "overall": metrics.summarise(gold, pred, ["macro_f1", "f1_non_hateful"], boot=Bootstrap(50)),
        "bootstrap": {"resampling_unit": "case"},
    }


def test_a_class_without_cases_gives_a_null_f1_with_its_reason_rendered_n_a():
    hateful_only = doc(np.ones(20, dtype=int), np.ones(20, dtype=int))  # no non-hateful gold or prediction
    loaded = [(source("german"), hateful_only)]
    cells = overall_cells("mhc_t2", loaded, ["f1_non_hateful", "macro_f1"])
    f1 = cells.filter(cells["column"] == "f1_non_hateful").row(0, named=True)
    assert f1["value"] is None and "non-hateful" in f1["undefined"]
    html = pivot(cells, "t", "row", "column", 50)
    cell = re.search(r'<td class="undefined" data-cell-id="mhc_t2:M:german:f1_non_hateful"[^>]*title="([^"]*)">([^<]*)<', html)
    assert cell and cell.group(2) == "n/a" and "undefined (no gold and no predicted non-hateful case" in cell.group(1)
    assert re.search(r'data-cell-id="mhc_t2:M:german:macro_f1"[^>]*>100.0<', html)  # the defined class alone
    missing = td(None, 50)
    assert "n/a" not in missing  # a cell with no figure at all stays "–"


def test_a_mean_over_languages_leaves_an_undefined_one_out_and_says_so():
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 200)
    loaded = [
        (source("german"), doc(gold, gold)),  # 100
        (source("french"), {"overall": {"macro_f1": {"value": None, "undefined": metrics.NO_CASE}, "n": 0}}),
        (source("spanish"), doc(gold, np.where(rng.random(200) < 0.5, gold, 1 - gold))),
    ]
    shots = shot_tables(loaded, {"M": ["spanish"]}, "results/tables/shots.json", "tables_shots")
    summary = {r["column"]: r for r in shots["shots_summary"].iter_rows(named=True)}
    zero = summary["zero-shot"]
    assert zero["value"] == 100.0  # german alone: french is not counted as 0 (which would give 50)
    assert "1 of 2" in zero["undefined"] and "french" in zero["undefined"]
    assert summary["many-shot"]["undefined"] is None
    html = pivot(shots["shots_summary"], "s", "model", "column", 50)
    assert re.search(r'data-cell-id="shots_summary:M:all_languages:zero-shot"[^>]*title="100.0 \(mean over the 1 of 2', html)
