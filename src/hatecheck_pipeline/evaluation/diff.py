"""What changed between two models (or one model at two revisions), per
functional test: the difference in accuracy (B minus A) per functionality,
from the counts, with the paired test of :mod:`.paired` giving its p-value
and its interval, and Holm's step-down over the functionalities on the
p-values as reported giving the flags.

- Paired: both models' predictions on the same cases; ``d = correct_B -
  correct_A`` per case.
- Units: the suite's templates on functional and expanded suites (every
  case of a template moves together; a sign-flip test), cases on held-out
  sets; where HateCheck and MHC cross templates with slurs
  (:func:`hatecheck_pipeline.suites.clusters.filler_codes`), a studentized
  test with the crossed design's variance.
- Verdict: ``flagged`` when Holm's adjusted p-value (``p_holm``) is at most
  alpha = 1 - ``level``; so the family-wise error rate over the
  functionalities is at most alpha (measured by simulation:
  ``benchmarks/bench_paired_test.py``). ``worse``: flagged with B below A.
- Interval: the differences the same test does not reject at ``level``
  (``ci_low``/``ci_high``: it excludes zero exactly when ``p_value`` is at
  most alpha) and at the Holm threshold of the test's rank
  (``holm_ci_low``/``holm_ci_high``).
- Cases: ``went_wrong`` / ``went_right`` list the cases A got right and B
  got wrong, and the reverse (id and text).

A model against itself flags nothing (every difference is 0); a copy whose
predictions are flipped on one functionality flags that one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from hatecheck_pipeline.core.files import write_json
from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL
from hatecheck_pipeline.evaluation import metrics as M
from hatecheck_pipeline.evaluation import paired as T
from hatecheck_pipeline.evaluation.scoring import (
    CLUSTER,
    FILLER,
    ScoringError,
    gold_cases,
    read_predictions,
    resampling_unit,
    uses_fillers,
    with_clusters,
)
from hatecheck_pipeline.suites.registry import Suite

CORRECTION = "holm"
ALL = "all cases"
METHOD = (
    "paired sign-flip test over the templates (exact up to 14 templates); where the suite crosses templates with "
    "slurs, a studentized test with the crossed design's variance (Student's t, min(templates, slurs) - 1 df); "
    "the interval inverts the same test"
)


def paired_cases(gold: pl.DataFrame, preds_a: pl.DataFrame, preds_b: pl.DataFrame, names: tuple[str, str]) -> pl.DataFrame:
    """Gold cases with both models' predictions (``pred_a``, ``pred_b``): the
    cases both predicted (a capped profile's draws may differ), at least one."""
    for preds, name in ((preds_a, names[0]), (preds_b, names[1])):
        dupes = preds.filter(pl.col("id").is_duplicated())["id"].unique().to_list()
        if dupes:
            raise ScoringError(f"{name}: {len(dupes)} duplicate id(s), e.g. {dupes[:3]}")
    both = (
        gold.join(preds_a.select("id", pl.col("pred").alias("pred_a")), on="id")
        .join(preds_b.select("id", pl.col("pred").alias("pred_b")), on="id")
        .sort("_order")
    )
    if both.is_empty():
        raise ScoringError(f"{names[0]} and {names[1]} share no case of the suite: nothing to compare")
    return both


def pct_difference(correct_a: int, correct_b: int, n: int) -> float | None:
    """B's accuracy minus A's in percentage points, from the counts, rounded
    once.

    >>> pct_difference(20, 19, 30)
    -3.3
    """
    return round(100 * (correct_b - correct_a) / n, 1) if n else None


def one_test(
    correct_a: np.ndarray, correct_b: np.ndarray, rows: np.ndarray | None, cols: np.ndarray | None, boot: M.Bootstrap
) -> tuple[dict[str, Any], Any]:
    """The paired test's figures for one set of cases (percent)."""
    alpha = 1 - boot.level
    res, prepared = T.paired_test(correct_a, correct_b, rows, cols, boot.samples, boot.seed, alpha)
    return {
        "n": res.n,
        "n_templates": res.n_templates,
        "n_fillers": res.n_fillers,
        "correct_a": res.correct_a,
        "correct_b": res.correct_b,
        "accuracy_a": M.pct(res.correct_a / res.n),
        "accuracy_b": M.pct(res.correct_b / res.n),
        "difference": pct_difference(res.correct_a, res.correct_b, res.n),
        "ci_low": M.pct(res.ci_low),
        "ci_high": M.pct(res.ci_high),
        "p_value": res.p_value,
        "method": res.method,
        "draws": res.draws,
        "exact": res.exact,
        **({"df": res.df} if res.df is not None else {}),
    }, prepared


def holm(tests: dict[str, dict[str, Any]], prepared: dict[str, Any], level: float) -> None:
    """Holm's step-down on the reported p-values: adds ``p_holm``,
    ``holm_level`` (the threshold at the test's rank), the interval at that
    level (``holm_ci_low``/``holm_ci_high``), ``flagged`` and ``worse``, in
    place."""
    alpha = 1 - level
    keys = list(tests)
    p_values = [tests[k]["p_value"] for k in keys]
    for key, adjusted, at in zip(keys, T.holm_adjust(p_values), T.holm_levels(p_values, alpha)):
        low, high = T.interval(prepared[key], at)
        flagged = adjusted <= alpha
        tests[key] |= {
            "p_holm": adjusted,
            "holm_level": round(1 - at, 6),
            "holm_ci_low": M.pct(low),
            "holm_ci_high": M.pct(high),
            "flagged": bool(flagged),
            "worse": bool(flagged and tests[key]["correct_b"] < tests[key]["correct_a"]),
        }


def changed_cases(cases: pl.DataFrame, mask: np.ndarray, limit: int | None = None) -> dict[str, list[dict[str, Any]]]:
    """The cases (id, text, gold) A got right and B wrong (``went_wrong``),
    and the reverse (``went_right``)."""
    part = cases.filter(pl.Series(mask))
    right_a, right_b = part["pred_a"] == part["gold"], part["pred_b"] == part["gold"]
    cols = [c for c in ("id", "text", "gold") if c in part.columns]

    def rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
        frame = frame.select(cols).with_columns(pl.col("gold").replace_strict({1: HATEFUL, 0: NON_HATEFUL}, return_dtype=pl.String))
        return frame.head(limit).to_dicts() if limit else frame.to_dicts()

    return {"went_wrong": rows(part.filter(right_a & ~right_b)), "went_right": rows(part.filter(~right_a & right_b))}


def compare(cases: pl.DataFrame, boot: M.Bootstrap) -> dict[str, Any]:
    """Per functionality (and over all cases): n, both accuracies, the
    difference B - A, its p-value and interval, Holm's verdict and the
    cases that changed."""
    correct_a = (cases["pred_a"] == cases["gold"]).to_numpy()
    correct_b = (cases["pred_b"] == cases["gold"]).to_numpy()
    rows = cases[CLUSTER].to_numpy() if CLUSTER in cases.columns else None
    cols = cases[FILLER].to_numpy() if FILLER in cases.columns else None

    def one(mask: np.ndarray, listed: bool = True) -> tuple[dict[str, Any], Any]:
        doc, prepared = one_test(
            correct_a[mask], correct_b[mask], None if rows is None else rows[mask], None if cols is None else cols[mask], boot
        )
        changed = changed_cases(cases, mask)
        counts = {f"n_{k}": len(v) for k, v in changed.items()}
        return doc | counts | (changed if listed else {}), prepared

    out: dict[str, Any] = {}
    if "functionality" in cases.columns:
        tests, prepared = {}, {}
        funcs = cases["functionality"].to_numpy()
        for f in dict.fromkeys(cases["functionality"].drop_nulls().to_list()):
            tests[f], prepared[f] = one(funcs == f)
        holm(tests, prepared, boot.level)
        out["by_functionality"] = tests
    overall, prepared_all = one(np.ones(cases.height, dtype=bool), listed="functionality" not in cases.columns)
    holm({ALL: overall}, {ALL: prepared_all}, boot.level)
    out["overall"] = overall
    return out


def run(
    suite: Suite,
    predictions_a: str | Path,
    predictions_b: str | Path,
    out: str | Path | None,
    names: tuple[str, str],
    boot: M.Bootstrap = M.Bootstrap(2000),
    gold_table: str | Path | None = None,
) -> dict[str, Any]:
    """Compare two predictions files on ``suite``; write the JSON to ``out``
    (naming the suite and its dataset, whose functional tests a reader
    labels the rows with)."""
    if boot.samples <= 0:
        raise ScoringError("a paired comparison needs random sign draws (evaluation.diff_samples > 0)")
    gold = gold_cases(suite, gold_table)
    unit = resampling_unit(suite)
    a = read_predictions(predictions_a, suite.id_column)
    b = read_predictions(predictions_b, suite.id_column)
    cases = with_clusters(paired_cases(gold, a, b, names), unit, fillers=uses_fillers(suite))
    doc = {
        "suite": suite.name,
        "dataset": suite.dataset,
        "a": {"model": names[0], "predictions": str(predictions_a)},
        "b": {"model": names[1], "predictions": str(predictions_b)},
        "difference": "accuracy of B minus accuracy of A, percentage points",
        "correction": CORRECTION,
        "method": METHOD,
        "bootstrap": boot.record(
            unit,
            paired=True,
            fillers=FILLER in cases.columns,
            draws=f"random sign vectors (every one when a test has at most {T.EXACT_UNITS} units)",
        ),
        **compare(cases, boot),
    }
    tests = doc.get("by_functionality", {})
    doc["flagged"] = [f for f, t in tests.items() if t["flagged"]]
    doc["worse"] = [f for f, t in tests.items() if t["worse"]]
    if out is not None:
        write_json(doc, out)
    return doc


def diff(
    suite: Suite, a: str, b: str, predictions_a: Path, predictions_b: Path, gold_table: Path, out: Path, bootstrap: M.Bootstrap
) -> str:
    """Stage ``diff_<a>_<b>_<suite>``: the per-functionality comparison of
    two models on one suite (``evaluation.diffs``)."""
    doc = run(suite, predictions_a, predictions_b, out, (a, b), bootstrap, gold_table)
    return (
        f"{b} - {a} on {suite.name}: {len(doc['flagged'])} functionalit{'y' if len(doc['flagged']) == 1 else 'ies'} flagged "
        f"({', '.join(doc['flagged']) or 'none'}) -> {out}"
    )
