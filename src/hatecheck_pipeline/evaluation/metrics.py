"""Classification metrics of the papers, with seeded bootstrap intervals.

Every function takes gold and predicted labels as 0/1 integer arrays
(1 = hateful) and returns plain Python values or a dict; figures are in
percent, rounded to one decimal. Point estimates and bootstrap resamples
use the same vectorised counts (per cluster: a functional suite's bootstrap
resamples templates, :mod:`hatecheck_pipeline.suites.clusters`); ``tests/evaluation/test_eval_metrics.py``
checks them against scikit-learn's ``f1_score``. scikit-learn is not
imported here: its import (~2-3 s with scipy and pandas) was most of the
wall time of each of the ~90 score stages of a report build.

A figure whose denominator is zero is undefined: F1 of a class with no gold
and no predicted case, accuracy of no case. Its value is None and the
reason is stored beside it (``undefined``); a macro F1 is the mean over the
classes whose F1 is defined (scikit-learn's macro average over the labels
present), None when neither is. A bootstrap resample in which a figure is
undefined is left out of its interval (``resamples_undefined`` counts them).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

import numpy as np

from hatecheck_pipeline.data.labels import HATEFUL, NON_HATEFUL

NO_CASE = "no case scored"
NO_CLASS_CASE = "no gold and no predicted {} case (2TP + FP + FN = 0)"


@dataclass(frozen=True)
class Bootstrap:
    """How every interval is resampled: ``samples`` resamples (0: no
    intervals) drawn by a generator seeded with ``seed``, percentile
    intervals at ``level``. One value from ``evaluation.bootstrap_samples``,
    ``evaluation.seed`` and ``evaluation.ci_level`` (``diff_samples`` for
    the paired comparisons).

    >>> Bootstrap(200).record("template", n_clusters=12)
    {'samples': 200, 'seed': 0, 'level': 0.95, 'resampling_unit': 'template', 'n_clusters': 12}
    """

    samples: int = 1000
    seed: int = 0
    level: float = 0.95

    def record(self, unit: str, **extra: Any) -> dict[str, Any]:
        """The ``bootstrap`` section of a metrics file: the settings, the
        resampling unit (``case`` or ``template``) and ``extra``."""
        return {**asdict(self), "resampling_unit": unit, **extra}


def pct(value: float | None) -> float | None:
    """A share as a percentage with one decimal (None or NaN: None).

    >>> pct(0.12345), pct(float("nan"))
    (12.3, None)
    """
    return None if value is None or np.isnan(value) else round(float(value) * 100, 1)


def mean_defined(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Element-wise mean of two arrays over the defined (non-NaN) entries:
    NaN only where both are NaN.

    >>> mean_defined(np.array([0.5, np.nan, np.nan]), np.array([1.0, 0.2, np.nan])).tolist()
    [0.75, 0.2, nan]
    """
    both = np.stack([a, b])
    count = (~np.isnan(both)).sum(axis=0)
    total = np.nansum(both, axis=0)
    return np.divide(total, count, out=np.full(count.shape, np.nan), where=count > 0)


def accuracy(gold: np.ndarray, pred: np.ndarray) -> float | None:
    """Share of cases whose prediction equals the gold label, in percent.

    >>> accuracy(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))
    75.0
    """
    return pct(np.mean(np.asarray(gold) == np.asarray(pred))) if len(gold) else None


def f1_scores(gold: np.ndarray, pred: np.ndarray) -> dict[str, float | None]:
    """F1 of each class and their unweighted mean (macro F1), in percent.

    A class absent from both gold and predictions has no F1 (None, not 0);
    the macro F1 is then the other class's (scikit-learn's macro average
    is over the labels present), None when no case was scored.

    >>> f1_scores(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))
    {'f1_hateful': 66.7, 'f1_non_hateful': 80.0, 'macro_f1': 73.3}
    >>> f1_scores(np.array([1, 1]), np.array([1, 0]))
    {'f1_hateful': 66.7, 'f1_non_hateful': 0.0, 'macro_f1': 33.3}
    >>> f1_scores(np.array([1, 1]), np.array([1, 1]))
    {'f1_hateful': 100.0, 'f1_non_hateful': None, 'macro_f1': 100.0}
    """
    g, p = np.asarray(gold).reshape(1, -1), np.asarray(pred).reshape(1, -1)
    hateful, non_hateful = _f1_batch(g, p, 1), _f1_batch(g, p, 0)
    return {
        "f1_hateful": pct(hateful[0]),
        "f1_non_hateful": pct(non_hateful[0]),
        "macro_f1": pct(mean_defined(hateful, non_hateful)[0]),
    }


def undefined_reason(name: str) -> str:
    """Why figure ``name`` can be undefined (stored beside its None).

    >>> undefined_reason("f1_non_hateful")
    'no gold and no predicted non-hateful case (2TP + FP + FN = 0)'
    """
    if name in ("f1_hateful", "f1_non_hateful"):
        return NO_CLASS_CASE.format(HATEFUL if name == "f1_hateful" else NON_HATEFUL)
    return NO_CASE


def _f1_batch(gold: np.ndarray, pred: np.ndarray, positive: int) -> np.ndarray:
    """Row-wise F1 of class ``positive`` for 2-D arrays (one resample a
    row); NaN where the class is neither gold nor predicted."""
    g, p = gold == positive, pred == positive
    tp = (g & p).sum(axis=1)
    denom = g.sum(axis=1) + p.sum(axis=1)
    return np.divide(2 * tp, denom, out=np.full(len(gold), np.nan), where=denom > 0)


# Per-cluster counts the figures are ratios of (one row each): a resample's
# figure is the same ratio of the counts summed over the clusters drawn.
COUNTS = ("n", "correct", "gold_1", "pred_1", "tp_1", "gold_0", "pred_0", "tp_0")
CASE, TEMPLATE = "case", "template"  # resampling units written next to every interval


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """num / den, NaN (undefined) where den is 0."""
    return np.divide(num, den, out=np.full(np.broadcast(num, den).shape, np.nan), where=den > 0)


NEEDS = {
    "accuracy": ("correct", "n"),
    "f1_hateful": ("tp_1", "gold_1", "pred_1"),
    "f1_non_hateful": ("tp_0", "gold_0", "pred_0"),
    "macro_f1": ("tp_1", "gold_1", "pred_1", "tp_0", "gold_0", "pred_0"),
}


def batch_statistics() -> dict[str, Callable[[dict[str, np.ndarray]], np.ndarray]]:
    """The figures as functions of summed counts (one value per resample)."""
    f1 = {k: (lambda c, k=k: _ratio(2 * c[f"tp_{k}"], c[f"gold_{k}"] + c[f"pred_{k}"])) for k in (1, 0)}
    return {
        "accuracy": lambda c: _ratio(c["correct"], c["n"]),
        "f1_hateful": f1[1],
        "f1_non_hateful": f1[0],
        "macro_f1": lambda c: mean_defined(f1[1](c), f1[0](c)),
    }


def cluster_counts(gold: np.ndarray, pred: np.ndarray, clusters: np.ndarray, k: int) -> np.ndarray:
    """(k, len(COUNTS)) int64 array: each cluster's counts."""
    g, p = np.asarray(gold) == 1, np.asarray(pred) == 1
    per_case = np.stack([np.ones(len(g), bool), g == p, g, p, g & p, ~g, ~p, ~g & ~p], axis=1).astype(np.int64)
    if k == len(g) and np.array_equal(clusters, np.arange(k)):
        return per_case  # one cluster per case, in order
    out = np.zeros((k, len(COUNTS)), dtype=np.int64)
    np.add.at(out, clusters, per_case)
    return out


def resample_indices(k: int, samples: int, seed: int) -> np.ndarray:
    """(samples, k): the clusters drawn in each resample (``k`` draws with
    replacement, a generator seeded by ``seed``).

    The draw depends on ``k``, ``samples`` and ``seed`` only, so a suite of
    k templates and a suite of k cases resample alike: with identical cases
    within each template the template-level interval IS the case-level
    interval of one case per template. With one cluster per case it is the
    case-level bootstrap (the draw the case-level intervals always used).
    """
    return np.random.default_rng(seed).integers(0, k, size=(samples, k))


def cluster_codes(clusters: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Cluster codes renumbered 0..K-1 in order of first appearance (a
    subset of a suite keeps its clusters' order) and K; None: one per case."""
    if clusters is None:
        return np.arange(n), n
    clusters = np.asarray(clusters)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster codes for {n} cases")
    if not n:
        return clusters.astype(np.int64), 0
    _, first, inverse = np.unique(clusters, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)], len(first)


def multiplicities(idx: np.ndarray, k: int) -> np.ndarray:
    """(samples, k): how often each of ``k`` units was drawn in each row of
    ``idx`` (one bincount over all rows, offset per row).

    >>> multiplicities(np.array([[0, 0, 2], [1, 2, 2]]), 3).tolist()
    [[2, 0, 1], [0, 1, 2]]
    """
    rows = len(idx)
    offsets = (np.arange(rows, dtype=np.int64) * k)[:, None]
    return np.bincount((idx + offsets).ravel(), minlength=rows * k).reshape(rows, k)


def filler_weights(fillers: np.ndarray, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The fillers' side of the two-way draw: codes 0..J-1 (-1: none), J and
    (samples, J + 1) multiplicities, the last column 1 for cases without a
    filler (never resampled on that axis). Its own generator stream, so the
    templates' draw is :func:`resample_indices`' unchanged."""
    fillers = np.asarray(fillers, dtype=np.int64)
    has = fillers >= 0
    codes = np.full(len(fillers), -1, dtype=np.int64)
    if has.any():
        codes[has] = cluster_codes(fillers[has], int(has.sum()))[0]
    j = int(codes.max()) + 1 if has.any() else 0
    draw = np.random.default_rng([seed, 1]).integers(0, max(j, 1), size=(samples, j))
    weights = np.ones((samples, j + 1), dtype=np.int64)
    weights[:, :j] = multiplicities(draw, j)
    return np.where(has, codes, j), weights, j


def bootstrap_replicates(
    gold: np.ndarray,
    pred: np.ndarray,
    names: list[str],
    samples: int = 1000,
    seed: int = 0,
    clusters: np.ndarray | None = None,
    fillers: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Each named figure (a share, not yet in percent) on ``samples``
    bootstrap resamples: clusters (``clusters``: a code per case; None:
    every case its own cluster) drawn with replacement, all cases of a
    drawn cluster kept together.

    ``fillers`` (a code per case, -1: none): the suite crosses its templates
    with fillers (slurs: :func:`hatecheck_pipeline.suites.clusters.filler_codes`), and both are drawn, independently
    (the two-way "pigeonhole" bootstrap of Owen 2007, conservative for a
    crossed design): a case counts as often as its template was drawn
    times as often as its filler was drawn. The templates' draw is the
    one-way draw's, so without any filler the values are the one-way
    bootstrap's exactly."""
    gold, pred = np.asarray(gold), np.asarray(pred)
    codes, k = cluster_codes(clusters, len(gold))
    has_fillers = fillers is not None and (np.asarray(fillers) >= 0).any()
    if not has_fillers:
        counts = cluster_counts(gold, pred, codes, k)
        idx = resample_indices(k, samples, seed)
        columns = {}
        for name in dict.fromkeys(c for n in names for c in NEEDS[n]):
            col = counts[:, COUNTS.index(name)]
            if (col == col[0]).all():  # equal in every cluster (n of equal-sized clusters): no need to gather
                columns[name] = np.full(samples, int(col[0]) * k, dtype=np.int64)
            else:  # integer sums: exact, so equal clusters scale every count alike
                columns[name] = col[idx].sum(axis=1)
    else:
        f_codes, f_weights, j = filler_weights(fillers, samples, seed)
        cells = codes * (j + 1) + f_codes  # one cell per (template, filler)
        cell_ids, cell_of_case = np.unique(cells, return_inverse=True)
        counts = cluster_counts(gold, pred, cell_of_case.reshape(-1), len(cell_ids))
        idx = resample_indices(k, samples, seed)
        t_weights = multiplicities(idx, k)
        weights = t_weights[:, cell_ids // (j + 1)] * f_weights[:, cell_ids % (j + 1)]  # (samples, cells)
        summed = weights @ counts  # exact integer sums
        columns = {name: summed[:, COUNTS.index(name)] for n in names for name in NEEDS[n]}
    stats = batch_statistics()
    return {name: stats[name](columns) for name in names}


def interval(values: np.ndarray, level: float) -> tuple[float | None, float | None]:
    """Percentile interval of bootstrap values (shares), in percent, over
    the resamples where the figure is defined (None, None when none is).

    >>> interval(np.array([0.1, 0.2, np.nan, 0.3]), 0.5)
    (15.0, 25.0)
    """
    values = np.asarray(values, dtype=float)
    values = values[~np.isnan(values)]
    if not len(values):
        return None, None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return pct(low), pct(high)


def bootstrap_ci(
    gold: np.ndarray,
    pred: np.ndarray,
    names: list[str],
    boot: Bootstrap = Bootstrap(),
    clusters: np.ndarray | None = None,
    store: dict[str, np.ndarray] | None = None,
    fillers: np.ndarray | None = None,
) -> dict[str, tuple[float | None, float | None]]:
    """Percentile bootstrap interval of each named figure, in percent.

    Cases (or, with ``clusters``, whole clusters of cases: a functional
    suite's templates) are resampled with replacement ``boot.samples``
    times with a ``numpy`` generator seeded by ``boot.seed`` (same seed,
    same interval). Vectorised: per-cluster counts times the resample weights.

    >>> g = np.array([1, 1, 1, 1, 0, 0, 0, 0]); p = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    >>> low, high = bootstrap_ci(g, p, ["accuracy"], Bootstrap(200))["accuracy"]
    >>> low <= 75.0 <= high
    True
    """
    gold, pred = np.asarray(gold), np.asarray(pred)
    if len(gold) == 0 or boot.samples <= 0:
        return {n: (None, None) for n in names}
    values = bootstrap_replicates(gold, pred, names, boot.samples, boot.seed, clusters, fillers)
    if store is not None:  # the caller keeps the bootstrap values (shares) too
        store.update(values)
    return {name: interval(values[name], boot.level) for name in names}


def summarise(
    gold: np.ndarray,
    pred: np.ndarray,
    names: list[str],
    boot: Bootstrap = Bootstrap(),
    clusters: np.ndarray | None = None,
    store: dict[str, np.ndarray] | None = None,
    fillers: np.ndarray | None = None,
) -> dict[str, object]:
    """``n``, ``n_clusters`` (the resampled units: cases, or templates with
    ``clusters``) and the named figures, each as ``{value, ci_low, ci_high}``
    (an undefined figure: value None and ``undefined``, the reason; a figure
    undefined in some resamples: ``resamples_undefined``, how many were left
    out of its interval); ``store`` (a dict) receives each figure's
    bootstrap values (shares; NaN where undefined).

    >>> s = summarise(np.array([1, 0]), np.array([1, 0]), ["accuracy"], Bootstrap(10))
    >>> s["n"], s["n_clusters"], s["accuracy"]["value"], s["accuracy"]["ci_low"]
    (2, 2, 100.0, 100.0)
    """
    gold, pred = np.asarray(gold), np.asarray(pred)
    point: dict[str, float] = {}
    if "accuracy" in names:
        point["accuracy"] = accuracy(gold, pred)
    if any(n.startswith("f1") or n == "macro_f1" for n in names):
        point.update(f1_scores(gold, pred))
    values: dict[str, np.ndarray] = {}
    cis = bootstrap_ci(gold, pred, names, boot, clusters, values, fillers)
    if store is not None:
        store.update(values)
    out: dict[str, object] = {"n": int(len(gold)), "n_clusters": cluster_codes(clusters, len(gold))[1]}
    if fillers is not None:
        has = np.asarray(fillers) >= 0
        out["n_fillers"] = int(len(np.unique(np.asarray(fillers)[has])))
    for name in names:
        fig: dict[str, object] = {"value": point[name], "ci_low": cis[name][0], "ci_high": cis[name][1]}
        if point[name] is None:
            fig["undefined"] = undefined_reason(name)
        left_out = int(np.isnan(values[name]).sum()) if name in values else 0
        if left_out:
            fig["resamples_undefined"] = left_out
        out[name] = fig
    return out


def contrast_consistency(
    hateful_correct: np.ndarray,
    contrast_correct: np.ndarray,
    boot: Bootstrap = Bootstrap(),
    clusters: np.ndarray | None = None,
) -> dict[str, object]:
    """Share of (hateful case, non-hateful contrast) pairs with BOTH right.

    One element per pair: whether the model got the hateful case right and
    whether it got its contrast right; ``clusters``: a cluster code per
    pair (pairs whose cases share a template resampled together).

    >>> r = contrast_consistency(np.array([1, 1, 0, 1]), np.array([1, 0, 1, 1]), Bootstrap(10))
    >>> r["n_pairs"], r["both_correct"]["value"]
    (4, 50.0)
    """
    both = (np.asarray(hateful_correct) & np.asarray(contrast_correct)).astype(int)
    ones = np.ones_like(both)
    s = summarise(ones, both, ["accuracy"], boot, clusters)
    return {
        "n_pairs": s["n"],
        "n_clusters": s["n_clusters"],
        "both_correct": s["accuracy"],
        "hateful_correct": pct(np.mean(hateful_correct)) if len(both) else None,
        "contrast_correct": pct(np.mean(contrast_correct)) if len(both) else None,
    }
