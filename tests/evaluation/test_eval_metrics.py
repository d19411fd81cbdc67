"""Metrics: docstring examples (doctest), scikit-learn agreement, seeded bootstrap."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from sklearn.metrics import f1_score

from hatecheck_pipeline.evaluation import cells, expanded_tables, metrics, scoring, shot_tables
from hatecheck_pipeline.evaluation.metrics import Bootstrap
from hatecheck_pipeline.report import html as report
from hatecheck_pipeline.report import lineage


@pytest.mark.parametrize("module", [metrics, scoring, cells, shot_tables, expanded_tables, report, lineage])
def test_docstring_examples_run(module):
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if module in (metrics, scoring, cells, shot_tables, expanded_tables):
        assert result.attempted > 0


def test_vectorised_f1_matches_sklearn():
    """F1 per class as scikit-learn computes it, undefined (NaN / None, not
    0) where the class is neither gold nor predicted; the macro F1 the mean
    over the defined classes (scikit-learn's macro over the labels present)."""
    rng = np.random.default_rng(1)
    gold = rng.integers(0, 2, size=(50, 40))
    pred = rng.integers(0, 2, size=(50, 40))
    pred[0] = 0  # a row without predicted hateful cases (F1 hateful 0: defined)
    gold[1], pred[1] = 1, 1  # no non-hateful case at all: F1 non-hateful undefined
    gold[2], pred[2] = 0, 0  # no hateful case at all: F1 hateful undefined
    stats = metrics.batch_statistics()
    for i in range(50):
        expected = f1_score(gold[i], pred[i], labels=[1, 0], average=None, zero_division=np.nan)
        macro = f1_score(gold[i], pred[i], average="macro")  # over the labels present in gold or pred
        # the resample statistics are ratios of summed counts (one cluster = all 40 cases)
        counts = metrics.cluster_counts(gold[i], pred[i], np.zeros(40, dtype=int), 1)
        summed = {name: counts[:, j] for j, name in enumerate(metrics.COUNTS)}
        assert np.allclose(stats["f1_hateful"](summed)[0], expected[0], equal_nan=True)
        assert np.allclose(stats["f1_non_hateful"](summed)[0], expected[1], equal_nan=True)
        assert np.isclose(stats["macro_f1"](summed)[0], macro)
        assert np.isclose(stats["accuracy"](summed)[0], np.mean(gold[i] == pred[i]))
        point = metrics.f1_scores(gold[i], pred[i])
        assert point == {
            "f1_hateful": metrics.pct(expected[0]),
            "f1_non_hateful": metrics.pct(expected[1]),
            "macro_f1": metrics.pct(macro),
        }
    assert metrics.f1_scores(np.array([1, 1]), np.array([1, 1]))["f1_non_hateful"] is None
    assert metrics.f1_scores(np.array([], dtype=int), np.array([], dtype=int)) == {
        "f1_hateful": None,
        "f1_non_hateful": None,
        "macro_f1": None,
    }


def test_an_undefined_f1_is_null_with_its_reason_and_left_out_of_the_interval():
    # every case hateful, all predicted hateful but one: F1 non-hateful 0 (defined: one predicted non-hateful);
    # every case hateful and predicted hateful: F1 non-hateful undefined
    gold, pred = np.ones(30, dtype=int), np.ones(30, dtype=int)
    s = metrics.summarise(gold, pred, ["accuracy", "f1_hateful", "f1_non_hateful", "macro_f1"], boot=Bootstrap(200, 0))
    assert s["f1_non_hateful"]["value"] is None and s["f1_non_hateful"]["ci_low"] is None
    assert "non-hateful" in s["f1_non_hateful"]["undefined"]
    assert s["macro_f1"]["value"] == 100.0 and "undefined" not in s["macro_f1"]  # the defined class alone, not (100 + 0) / 2
    pred[0] = 0
    s = metrics.summarise(gold, pred, ["f1_non_hateful", "macro_f1"], boot=Bootstrap(200, 0))
    assert s["f1_non_hateful"]["value"] == 0.0 and "undefined" not in s["f1_non_hateful"]
    # resamples that miss the one non-hateful prediction have no non-hateful F1: left out, counted
    assert 0 < s["f1_non_hateful"]["resamples_undefined"] < 200
    assert s["f1_non_hateful"]["ci_low"] == 0.0 == s["f1_non_hateful"]["ci_high"]
    assert s["macro_f1"]["ci_low"] <= s["macro_f1"]["value"] <= s["macro_f1"]["ci_high"]


def test_score_path_does_not_import_sklearn():
    """The score stage's metrics module stays free of scikit-learn's import
    cost (checked in a fresh interpreter, since the test session has it)."""
    import subprocess
    import sys

    code = "import sys, hatecheck_pipeline.evaluation.metrics, hatecheck_pipeline.evaluation.scoring; print('sklearn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(2)
    gold = rng.integers(0, 2, 300)
    pred = np.where(rng.random(300) < 0.8, gold, 1 - gold)
    a = metrics.summarise(gold, pred, ["accuracy", "macro_f1"], boot=Bootstrap(500, 7))
    b = metrics.summarise(gold, pred, ["accuracy", "macro_f1"], boot=Bootstrap(500, 7))
    c = metrics.summarise(gold, pred, ["accuracy", "macro_f1"], boot=Bootstrap(500, 8))
    assert a == b
    assert a != c
    for name in ("accuracy", "macro_f1"):
        fig = a[name]
        assert fig["ci_low"] <= fig["value"] <= fig["ci_high"]
        assert fig["ci_high"] - fig["ci_low"] < 15
    assert a["accuracy"]["value"] == round(float(np.mean(gold == pred)) * 100, 1)


def test_no_bootstrap_gives_null_intervals():
    s = metrics.summarise(np.array([1, 0]), np.array([1, 1]), ["accuracy"], boot=Bootstrap(0))
    assert s["accuracy"] == {"value": 50.0, "ci_low": None, "ci_high": None}
