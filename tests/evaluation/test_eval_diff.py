"""The per-functionality diff of two models where the answer is known: a
model against itself flags nothing; a copy whose predictions are flipped on
one functionality flags exactly that one; the bootstrap is paired and
resamples templates; Holm's correction is applied in order."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation import diff as D
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation.scoring import ScoringError
from hatecheck_pipeline.suites.registry import hatecheck

FUNCS = [f"f{i}" for i in range(12)]


@pytest.fixture
def suite_files(tmp_path):
    """A HateCheck-shaped table: 12 functionalities x 8 templates x 3 cases,
    and a model right on every case but the first of each functionality."""
    rows = []
    for fi, f in enumerate(FUNCS):
        for t in range(8):
            for c in range(3):
                rows.append({"case_id": len(rows) + 1, "text": f"case {len(rows)}", "label": "hateful" if fi % 2 else "non-hateful",
                             "functionality": f, "templ_id": fi * 100 + t})
    table = pl.DataFrame(rows)
    table_file = tmp_path / "table.parquet"
    table.write_parquet(table_file)
    gold = (table["label"] == "hateful").to_numpy()
    right = np.array([r["case_id"] % 24 != 1 for r in rows])
    pred = np.where(right, gold, ~gold)
    a = pl.DataFrame({"case_id": table["case_id"], "pred": np.where(pred, "hateful", "non-hateful")})
    a_file = tmp_path / "a.csv"
    a.write_csv(a_file)
    return table_file, a_file, table


def test_a_model_against_itself_flags_nothing(suite_files, tmp_path):
    table, a, _ = suite_files
    doc = D.run(hatecheck(), a, a, tmp_path / "d.json", ("A", "A"), boot=Bootstrap(500), gold_table=table)
    assert doc["flagged"] == []
    assert all(t["difference"] == 0 and t["ci_low"] == 0 == t["ci_high"] and t["p_value"] == 1.0 for t in doc["by_functionality"].values())
    assert json.loads((tmp_path / "d.json").read_text())["correction"] == "holm"
    assert doc["bootstrap"]["resampling_unit"] == "template" and doc["bootstrap"]["paired"]


def test_flipping_one_functionality_flags_exactly_that_one(suite_files, tmp_path):
    table, a, frame = suite_files
    preds = pl.read_csv(a).join(frame.select("case_id", "functionality"), on="case_id")
    flipped = preds.with_columns(
        pl.when(pl.col("functionality") == "f3")
        .then(pl.when(pl.col("pred") == "hateful").then(pl.lit("non-hateful")).otherwise(pl.lit("hateful")))
        .otherwise(pl.col("pred")).alias("pred")
    ).select("case_id", "pred")
    b = tmp_path / "b.csv"
    flipped.write_csv(b)
    doc = D.run(hatecheck(), a, b, None, ("A", "B"), boot=Bootstrap(2000), gold_table=table)
    assert doc["flagged"] == ["f3"]
    f3 = doc["by_functionality"]["f3"]
    assert f3["difference"] == round(f3["accuracy_b"] - f3["accuracy_a"], 1) and f3["difference"] < -50
    assert f3["holm_level"] == pytest.approx(1 - 0.05 / len(FUNCS))  # the smallest p-value is tested at alpha / m


def test_holm_stops_at_the_first_difference_it_cannot_flag():
    reps = {"big": np.full(200, 0.3), "zero": np.zeros(200), "also_big": np.full(200, -0.3)}
    tests = {k: {"p_value": D.p_value(v)} for k, v in reps.items()}
    D.holm(tests, reps, 0.95)
    assert tests["big"]["flagged"] and tests["also_big"]["flagged"] and not tests["zero"]["flagged"]
    assert sorted(t["holm_level"] for t in tests.values()) == pytest.approx([0.95, 1 - 0.05 / 2, 1 - 0.05 / 3])


def test_the_draw_is_paired_and_by_template():
    correct_a = np.array([1, 1, 0, 0, 1, 0], dtype=bool)
    same = D.resampled_difference(correct_a, correct_a, np.array([0, 0, 1, 1, 2, 2]), 300, 0)
    assert (same == 0).all()  # one draw scores both: a model equals itself in every resample
    one_template = D.resampled_difference(np.array([1, 0, 1], bool), np.array([0, 0, 0], bool), np.array([7, 7, 7]), 50, 0)
    assert np.allclose(one_template, -2 / 3)  # one template: every resample draws all of it


def test_two_models_with_no_case_in_common_is_one_line(suite_files, tmp_path):
    table, a, _ = suite_files
    other = tmp_path / "other.csv"
    pl.DataFrame({"case_id": [99999], "pred": ["hateful"]}).write_csv(other)
    with pytest.raises(ScoringError, match="share no case"):
        D.run(hatecheck(), a, other, None, ("A", "B"), gold_table=table)
