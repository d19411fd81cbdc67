"""The per-functionality diff of two models where the answer is known: a
model against itself flags nothing; a copy whose predictions are flipped on
one functionality flags exactly that one; the test is paired and flips
templates (and fillers where a suite crosses them); the flags are Holm's
step-down on the p-values the file reports; the interval excludes zero
exactly when the p-value is below alpha; the p-value is the exact one where
every sign vector is enumerated."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.evaluation import diff as D
from hatecheck_pipeline.evaluation.scoring import ScoringError
from hatecheck_pipeline.suites.registry import hatecheck

FUNCS = [f"f{i}" for i in range(12)]


@pytest.fixture
def suite_files(tmp_path):
    """A HateCheck-shaped table: 12 functionalities x 16 templates x 3 cases,
    and a model right on every case but the first of each functionality."""
    rows = []
    for fi, f in enumerate(FUNCS):
        for t in range(16):
            for c in range(3):
                rows.append(
                    {
                        "case_id": len(rows) + 1,
                        "text": f"case {len(rows)}",
                        "label": "hateful" if fi % 2 else "non-hateful",
                        "functionality": f,
                        "templ_id": fi * 100 + t,
                    }
                )
    table = pl.DataFrame(rows)
    table_file = tmp_path / "table.parquet"
    table.write_parquet(table_file)
    gold = (table["label"] == "hateful").to_numpy()
    right = np.array([r["case_id"] % 48 != 1 for r in rows])
    pred = np.where(right, gold, ~gold)
    a = pl.DataFrame({"case_id": table["case_id"], "pred": np.where(pred, "hateful", "non-hateful")})
    a_file = tmp_path / "a.csv"
    a.write_csv(a_file)
    return table_file, a_file, table


def test_a_model_against_itself_flags_nothing(suite_files, tmp_path):
    table, a, _ = suite_files
    doc = D.run(hatecheck(), a, a, tmp_path / "d.json", ("A", "A"), boot=Bootstrap(500), gold_table=table)
    assert doc["flagged"] == [] and (doc["suite"], doc["dataset"]) == ("hatecheck", "hatecheck")
    assert all(t["difference"] == 0 and t["ci_low"] == 0 == t["ci_high"] and t["p_value"] == 1.0 for t in doc["by_functionality"].values())
    assert json.loads((tmp_path / "d.json").read_text())["correction"] == "holm"
    assert doc["bootstrap"]["resampling_unit"] == "template" and doc["bootstrap"]["paired"]


def test_flipping_one_functionality_flags_exactly_that_one(suite_files, tmp_path):
    table, a, frame = suite_files
    preds = pl.read_csv(a).join(frame.select("case_id", "functionality"), on="case_id")
    flipped = preds.with_columns(
        pl.when(pl.col("functionality") == "f3")
        .then(pl.when(pl.col("pred") == "hateful").then(pl.lit("non-hateful")).otherwise(pl.lit("hateful")))
        .otherwise(pl.col("pred"))
        .alias("pred")
    ).select("case_id", "pred")
    b = tmp_path / "b.csv"
    flipped.write_csv(b)
    doc = D.run(hatecheck(), a, b, None, ("A", "B"), boot=Bootstrap(2000), gold_table=table)
    assert doc["flagged"] == ["f3"] == doc["worse"]
    f3 = doc["by_functionality"]["f3"]
    assert f3["difference"] == D.pct_difference(f3["correct_a"], f3["correct_b"], f3["n"]) and f3["difference"] < -50
    assert f3["holm_level"] == pytest.approx(1 - 0.05 / len(FUNCS))  # the smallest p-value is tested at alpha / m
    assert f3["p_holm"] == pytest.approx(min(1, f3["p_value"] * len(FUNCS)), abs=1e-6)
    assert f3["holm_ci_high"] < 0 and f3["ci_high"] < 0
    # the cases that went from right to wrong, with their text
    assert f3["n_went_wrong"] == len(f3["went_wrong"]) == 47 and f3["went_right"][0]["text"].startswith("case ")


def test_the_report_labels_the_tests_from_the_dataset_the_comparison_records():
    """The report's rows are the functional tests of the dataset the diff
    document names (MHC's F-numbers here), not of one guessed from the
    suite's name."""
    from hatecheck_pipeline.report.diff_view import one

    test = {
        "n": 10,
        "accuracy_a": 90.0,
        "accuracy_b": 40.0,
        "difference": -50.0,
        "ci_low": -60.0,
        "ci_high": -40.0,
        "p_value": 0.001,
        "p_holm": 0.001,
        "flagged": True,
        "worse": True,
    }
    doc = {
        "suite": "my_pinyin_suite",
        "dataset": "mhc",
        "a": {"model": "A"},
        "b": {"model": "B"},
        "by_functionality": {"spell_pinyin_h": test},
        "flagged": ["spell_pinyin_h"],
    }
    html = one("diff_A_B_my_pinyin_suite", {"doc": doc, "file": "d.json", "stage": "diff_A_B_my_pinyin_suite"})
    assert "F34 spell_pinyin_h" in html


def test_holm_adjusts_the_reported_p_values_and_ties_are_not_decided_by_name():
    assert D.T.holm_adjust([0.001, 0.001, 0.04]) == [0.003, 0.003, 0.04]
    tests = {
        "b": {"p_value": 0.01, "correct_a": 5, "correct_b": 1},
        "a": {"p_value": 0.01, "correct_a": 1, "correct_b": 5},
        "c": {"p_value": 0.5, "correct_a": 3, "correct_b": 3},
    }
    prepared = {k: D.T.paired_test(np.ones(4), np.zeros(4))[1] for k in tests}
    D.holm(tests, prepared, 0.95)
    assert tests["a"]["p_holm"] == tests["b"]["p_holm"] == 0.03 and tests["a"]["flagged"] == tests["b"]["flagged"] is True
    assert tests["b"]["worse"] and not tests["a"]["worse"] and not tests["c"]["flagged"]


def test_the_flags_are_holm_on_the_printed_p_values(suite_files, tmp_path):
    """Random predictions for B: whatever it flags, Holm applied by hand to
    the file's own p-values gives the same flags, and each interval
    excludes zero exactly when its p-value is at most alpha."""
    table, a, frame = suite_files
    rng = np.random.default_rng(3)
    worse = frame["functionality"].is_in(["f1", "f2"]).to_numpy()
    flip = rng.random(frame.height) < np.where(worse, 0.6, 0.1)
    pred_a = pl.read_csv(a)["pred"].to_numpy()
    pred_b = np.where(flip, np.where(pred_a == "hateful", "non-hateful", "hateful"), pred_a)
    b = tmp_path / "b.csv"
    pl.DataFrame({"case_id": frame["case_id"], "pred": pred_b}).write_csv(b)
    doc = D.run(hatecheck(), a, b, None, ("A", "B"), boot=Bootstrap(4000), gold_table=table)
    tests = doc["by_functionality"]
    p = sorted((t["p_value"], k) for k, t in tests.items())
    by_hand, going = set(), True
    for i, (value, key) in enumerate(p):
        going = going and value <= 0.05 / (len(p) - i)
        if going:
            by_hand.add(key)
    assert set(doc["flagged"]) == by_hand and {"f1", "f2"} <= by_hand
    for t in tests.values():
        assert (t["p_value"] <= 0.05) == (t["ci_low"] > 0 or t["ci_high"] < 0)
        assert t["ci_low"] <= t["difference"] <= t["ci_high"]


def test_exact_p_value_of_a_sign_flip_test():
    """Four templates, each B worse by one case, one unchanged: of the 2^5
    sign vectors, those giving |T*| >= 4 are the 2 x 2 with the four
    signed alike: p = 4 / 32 (McNemar's exact two-sided p on 4 vs 0
    discordant pairs is 0.125 too)."""
    rows = np.array([0, 0, 1, 1, 2, 2, 3, 3, 4, 4])
    a = np.array([1, 0, 1, 0, 1, 0, 1, 0, 1, 1])
    b = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1, 1])
    res, _ = D.T.paired_test(a, b, rows)
    assert res.exact and res.draws == 32 and res.p_value == 0.125
    assert res.n_templates == 5 and res.difference == -0.4


def test_a_filler_axis_widens_the_interval_of_a_filler_effect():
    """Errors that depend only on the filler (B wrong on half the slurs in
    every template): flipping templates alone sees 8 identical templates
    and a tiny interval; flipping the fillers too sees 2 x 9 fillers."""
    rows = np.repeat(np.arange(8), 18)
    cols = np.tile(np.arange(18), 8)
    a = np.ones(144, dtype=int)
    b = np.where(cols < 9, 0, 1)
    one_way, _ = D.T.paired_test(a, b, rows, None, 4000, 0)
    two_way, _ = D.T.paired_test(a, b, rows, cols, 4000, 0)
    assert one_way.ci_high - one_way.ci_low < 0.05 < two_way.ci_high - two_way.ci_low
    assert two_way.n_fillers == 18 and two_way.method == "crossed-t" and two_way.df == 7 and not two_way.exact


def test_holm_stops_at_the_first_difference_it_cannot_flag():
    tests = {
        "big": {"p_value": 0.001, "correct_a": 9, "correct_b": 1},
        "zero": {"p_value": 0.6, "correct_a": 5, "correct_b": 5},
        "also_big": {"p_value": 0.002, "correct_a": 1, "correct_b": 9},
    }
    prepared = {k: D.T.paired_test(np.ones(12), np.zeros(12))[1] for k in tests}
    D.holm(tests, prepared, 0.95)
    assert tests["big"]["flagged"] and tests["also_big"]["flagged"] and not tests["zero"]["flagged"]
    assert sorted(t["holm_level"] for t in tests.values()) == pytest.approx([0.95, 1 - 0.05 / 2, 1 - 0.05 / 3])


def test_the_test_is_paired_and_by_template():
    correct_a = np.array([1, 1, 0, 0, 1, 0])
    same, _ = D.T.paired_test(correct_a, correct_a, np.array([0, 0, 1, 1, 2, 2]))
    assert same.p_value == 1.0 and same.ci_low <= 0 <= same.ci_high  # a model against itself
    # three templates: the smallest attainable p-value is 2 / 8, so no difference is ever rejected
    assert same.draws == 8 and (same.ci_low, same.ci_high) == (-1.0, 1.0)
    one_template, _ = D.T.paired_test(np.array([1, 0, 1]), np.array([0, 0, 0]), np.array([7, 7, 7]))
    assert one_template.draws == 2 and one_template.p_value == 1.0  # one template: nothing to tell apart


def test_two_models_with_no_case_in_common_is_one_line(suite_files, tmp_path):
    table, a, _ = suite_files
    other = tmp_path / "other.csv"
    pl.DataFrame({"case_id": [99999], "pred": ["hateful"]}).write_csv(other)
    with pytest.raises(ScoringError, match="share no case"):
        D.run(hatecheck(), a, other, None, ("A", "B"), gold_table=table)


def test_the_crossed_test_by_hand():
    """2 templates x 2 slurs, B wrong on one case: T = -1, the centred
    sums per template and per slur are +-0.5, so V = max(0.5 + 0.5 - 0.75,
    0.5, 0.5, 1) = 1 and t = -1 with 1 degree of freedom, whose two-sided
    p-value is exactly 0.5 (the Cauchy distribution)."""
    res, _ = D.T.paired_test(np.ones(4), np.array([0, 1, 1, 1]), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    assert res.method == "crossed-t" and res.df == 1 and res.p_value == 0.5
    assert res.ci_low == -1.0 and res.ci_high == 1.0  # t_1's 97.5% point is 12.7: the interval fills [-1, 1]


def test_a_consistent_drop_across_templates_and_slurs_is_found():
    """B wrong on a fifth of the cases, spread evenly over 8 templates and
    18 slurs (no template or slur worse than another): a studentized test
    sees a clear difference where random signs on templates and slurs would
    count the difference itself as noise."""
    rows, cols = np.repeat(np.arange(8), 18), np.tile(np.arange(18), 8)
    b = np.ones(144, dtype=int)
    b[(rows * 18 + cols) % 5 == 0] = 0
    res, _ = D.T.paired_test(np.ones(144, dtype=int), b, rows, cols)
    assert res.p_value < 0.05 / 29 and res.ci_high < 0
