"""What changed between two models (or one model at two revisions), per
functional test: the difference in accuracy (B minus A) per functionality,
with a paired bootstrap interval, flagged only where the difference holds
after a correction for the number of functionalities tested.

- Paired: both models' predictions on the same cases; each resample draws
  clusters once and scores both models on that draw, so the interval is of
  the difference itself, not of two independent accuracies.
- Clusters: the suite's templates on functional and expanded suites (every
  case generated from one template drawn together, as the score stages'
  intervals), cases on held-out sets.
- Correction: Holm's step-down over the functionalities. Each
  functionality's two-sided bootstrap p-value (twice the smaller share of
  resampled differences at or beyond zero, +1-smoothed) orders them; the
  i-th smallest (0-based, of m) is flagged when its percentile interval at
  level ``1 - alpha / (m - i)`` (alpha = 1 - ``level``) excludes zero and
  every smaller one was flagged. So the family-wise error rate over the
  functionalities is at most alpha.

A model against itself flags nothing (every resampled difference is 0); a
copy whose predictions are flipped on one functionality flags that one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np
import polars as pl

from hatecheck_pipeline.core.files import write_json
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation.scoring import CLUSTER, ScoringError, gold_cases, read_predictions, resampling_unit, with_clusters
from hatecheck_pipeline.suites.registry import Suite

CORRECTION = "holm"
ALL = "all cases"


def paired_cases(gold: pl.DataFrame, preds_a: pl.DataFrame, preds_b: pl.DataFrame, names: tuple[str, str]) -> pl.DataFrame:
    """Gold cases with both models' predictions (``pred_a``, ``pred_b``): the
    cases both predicted (a capped profile's draws may differ), at least one."""
    for preds, name in ((preds_a, names[0]), (preds_b, names[1])):
        dupes = preds.filter(pl.col("id").is_duplicated())["id"].unique().to_list()
        if dupes:
            raise ScoringError(f"{name}: {len(dupes)} duplicate id(s), e.g. {dupes[:3]}")
    both = gold.join(preds_a.rename({"pred": "pred_a"}), on="id").join(preds_b.rename({"pred": "pred_b"}), on="id").sort("_order")
    if both.is_empty():
        raise ScoringError(f"{names[0]} and {names[1]} share no case of the suite: nothing to compare")
    return both


def resampled_difference(correct_a: np.ndarray, correct_b: np.ndarray, clusters: np.ndarray, samples: int, seed: int) -> np.ndarray:
    """B's accuracy minus A's (shares) on ``samples`` paired resamples of
    the clusters (one draw scores both)."""
    codes, k = M.cluster_codes(clusters, len(correct_a))
    n = np.bincount(codes, minlength=k)
    a = np.bincount(codes, weights=correct_a.astype(np.float64), minlength=k)
    b = np.bincount(codes, weights=correct_b.astype(np.float64), minlength=k)
    idx = M.resample_indices(k, samples, seed)
    total = n[idx].sum(axis=1)
    return (b[idx].sum(axis=1) - a[idx].sum(axis=1)) / np.maximum(total, 1)


def p_value(diffs: np.ndarray) -> float:
    """Two-sided bootstrap p-value of a zero difference (+1-smoothed).

    >>> p_value(np.zeros(99)), round(p_value(np.full(99, 0.2)), 3)
    (1.0, 0.02)
    """
    below, above = int((diffs <= 0).sum()), int((diffs >= 0).sum())
    return float(min(1.0, 2 * (1 + min(below, above)) / (len(diffs) + 1)))


def holm(tests: dict[str, dict[str, Any]], replicates: Mapping[str, np.ndarray], level: float) -> None:
    """Holm's step-down: adds ``holm_level``, ``holm_ci_low``/``holm_ci_high``
    (percent) and ``flagged`` to each test, in place."""
    alpha, m = 1 - level, len(tests)
    still = True
    for i, key in enumerate(sorted(tests, key=lambda k: (tests[k]["p_value"], k))):
        at = 1 - alpha / (m - i)
        low, high = M.interval(replicates[key], at)
        excludes = low > 0 or high < 0
        still = still and excludes
        tests[key] |= {"holm_level": round(at, 6), "holm_ci_low": low, "holm_ci_high": high, "flagged": bool(still)}


def compare(cases: pl.DataFrame, boot: M.Bootstrap) -> dict[str, Any]:
    """Per functionality (and over all cases): n, both accuracies, the
    difference B - A with its paired interval, p-value, Holm's verdict."""
    correct_a = (cases["pred_a"] == cases["gold"]).to_numpy()
    correct_b = (cases["pred_b"] == cases["gold"]).to_numpy()
    clusters = cases[CLUSTER].to_numpy() if CLUSTER in cases.columns else None

    def one(mask: np.ndarray) -> tuple[dict[str, Any], np.ndarray]:
        ca, cb = correct_a[mask], correct_b[mask]
        cl = clusters[mask] if clusters is not None else None
        reps = resampled_difference(ca, cb, cl, boot.samples, boot.seed)
        low, high = M.interval(reps, boot.level)
        acc_a, acc_b = M.pct(ca.mean()), M.pct(cb.mean())
        return {"n": int(mask.sum()), "accuracy_a": acc_a, "accuracy_b": acc_b, "difference": round(acc_b - acc_a, 1),
                "ci_low": low, "ci_high": high, "p_value": round(p_value(reps), 6)}, reps

    out: dict[str, Any] = {}
    if "functionality" in cases.columns:
        tests, reps = {}, {}
        funcs = cases["functionality"].to_numpy()
        for f in dict.fromkeys(cases["functionality"].drop_nulls().to_list()):
            tests[f], reps[f] = one(funcs == f)
        holm(tests, reps, boot.level)
        out["by_functionality"] = tests
    overall, reps_all = one(np.ones(cases.height, dtype=bool))
    holm({ALL: overall}, {ALL: reps_all}, boot.level)
    out["overall"] = overall
    return out


def run(suite: Suite, predictions_a: str | Path, predictions_b: str | Path, out: str | Path | None, names: tuple[str, str],
        boot: M.Bootstrap = M.Bootstrap(2000), gold_table: str | Path | None = None) -> dict[str, Any]:
    """Compare two predictions files on ``suite``; write the JSON to ``out``."""
    if boot.samples <= 0:
        raise ScoringError("a paired comparison needs bootstrap samples (evaluation.bootstrap_samples > 0)")
    gold = gold_cases(suite, gold_table)
    unit = resampling_unit(suite)
    a = read_predictions(predictions_a, suite.id_column)
    b = read_predictions(predictions_b, suite.id_column)
    cases = with_clusters(paired_cases(gold, a, b, names), unit)
    doc = {
        "suite": suite.name,
        "a": {"model": names[0], "predictions": str(predictions_a)},
        "b": {"model": names[1], "predictions": str(predictions_b)},
        "difference": "accuracy of B minus accuracy of A, percentage points",
        "correction": CORRECTION,
        "bootstrap": boot.record(unit, paired=True),
        **compare(cases, boot),
    }
    flagged = [f for f, t in doc.get("by_functionality", {}).items() if t["flagged"]]
    doc["flagged"] = flagged
    if out is not None:
        write_json(doc, out)
    return doc


def diff(suite: Suite, a: str, b: str, predictions_a: Path, predictions_b: Path, gold_table: Path, out: Path,
         bootstrap: M.Bootstrap) -> str:
    """Stage ``diff_<a>_<b>_<suite>``: the per-functionality comparison of
    two models on one suite (``evaluation.diffs``)."""
    doc = run(suite, predictions_a, predictions_b, out, (a, b), bootstrap, gold_table)
    return f"{b} - {a} on {suite.name}: {len(doc['flagged'])} functionalit{'y' if len(doc['flagged']) == 1 else 'ies'} flagged " \
           f"({', '.join(doc['flagged']) or 'none'}) -> {out}"
