"""Classification metrics of the papers, with seeded bootstrap intervals.

Every function takes gold and predicted labels as 0/1 integer arrays
(1 = hateful) and returns plain Python values or a dict; figures are in
percent, rounded to one decimal. Point estimates and bootstrap resamples
use the same vectorised counts; ``tests/evaluation/test_eval_metrics.py``
checks them against scikit-learn's ``f1_score``. scikit-learn is not
imported here: its import (~2-3 s with scipy and pandas) was most of the
wall time of each of the ~90 score stages of a report build.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

HATEFUL = "hateful"
NON_HATEFUL = "non-hateful"

Statistic = Callable[[np.ndarray, np.ndarray], np.ndarray]


def pct(value: float) -> float:
    """A share as a percentage with one decimal.

    >>> pct(0.12345)
    12.3
    """
    return round(float(value) * 100, 1)


def accuracy(gold: np.ndarray, pred: np.ndarray) -> float | None:
    """Share of cases whose prediction equals the gold label, in percent.

    >>> accuracy(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))
    75.0
    """
    return pct(np.mean(np.asarray(gold) == np.asarray(pred))) if len(gold) else None


def f1_scores(gold: np.ndarray, pred: np.ndarray) -> dict[str, float]:
    """F1 of each class and their unweighted mean (macro F1), in percent.

    A class absent from both gold and predictions scores 0 (scikit-learn's
    ``zero_division=0``), as in the papers' tables.

    >>> f1_scores(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))
    {'f1_hateful': 66.7, 'f1_non_hateful': 80.0, 'macro_f1': 73.3}
    """
    g, p = np.asarray(gold).reshape(1, -1), np.asarray(pred).reshape(1, -1)
    hateful, non_hateful = _f1_batch(g, p, 1)[0], _f1_batch(g, p, 0)[0]
    return {
        "f1_hateful": pct(hateful),
        "f1_non_hateful": pct(non_hateful),
        "macro_f1": pct((hateful + non_hateful) / 2),
    }


def _f1_batch(gold: np.ndarray, pred: np.ndarray, positive: int) -> np.ndarray:
    """Row-wise F1 of class ``positive`` for 2-D arrays (one resample a row)."""
    g, p = gold == positive, pred == positive
    tp = (g & p).sum(axis=1)
    denom = g.sum(axis=1) + p.sum(axis=1)
    return np.divide(2 * tp, denom, out=np.zeros(len(gold), dtype=float), where=denom > 0)


def batch_statistics() -> dict[str, Statistic]:
    """Vectorised versions of the figures, for bootstrap resamples (2-D)."""
    return {
        "accuracy": lambda g, p: (g == p).mean(axis=1),
        "f1_hateful": lambda g, p: _f1_batch(g, p, 1),
        "f1_non_hateful": lambda g, p: _f1_batch(g, p, 0),
        "macro_f1": lambda g, p: (_f1_batch(g, p, 1) + _f1_batch(g, p, 0)) / 2,
    }


def bootstrap_ci(
    gold: np.ndarray,
    pred: np.ndarray,
    names: list[str],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, tuple[float | None, float | None]]:
    """Percentile bootstrap interval of each named figure, in percent.

    Cases are resampled with replacement ``samples`` times with a
    ``numpy`` generator seeded by ``seed`` (same seed, same interval).

    >>> g = np.array([1, 1, 1, 1, 0, 0, 0, 0]); p = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    >>> low, high = bootstrap_ci(g, p, ["accuracy"], samples=200, seed=0)["accuracy"]
    >>> low <= 75.0 <= high
    True
    """
    gold, pred = np.asarray(gold), np.asarray(pred)
    if len(gold) == 0 or samples <= 0:
        return {n: (None, None) for n in names}
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(gold), size=(samples, len(gold)))
    g, p = gold[idx], pred[idx]
    stats = batch_statistics()
    tail = (1 - level) / 2 * 100
    out = {}
    for name in names:
        values = stats[name](g, p)
        low, high = np.percentile(values, [tail, 100 - tail])
        out[name] = (pct(low), pct(high))
    return out


def summarise(
    gold: np.ndarray,
    pred: np.ndarray,
    names: list[str],
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, object]:
    """``n`` and the named figures, each as ``{value, ci_low, ci_high}``.

    >>> s = summarise(np.array([1, 0]), np.array([1, 0]), ["accuracy"], samples=10)
    >>> s["n"], s["accuracy"]["value"], s["accuracy"]["ci_low"]
    (2, 100.0, 100.0)
    """
    gold, pred = np.asarray(gold), np.asarray(pred)
    point: dict[str, float] = {}
    if "accuracy" in names:
        point["accuracy"] = accuracy(gold, pred)
    if any(n.startswith("f1") or n == "macro_f1" for n in names):
        point.update(f1_scores(gold, pred))
    cis = bootstrap_ci(gold, pred, names, samples, seed, level)
    out: dict[str, object] = {"n": int(len(gold))}
    for name in names:
        out[name] = {"value": point[name], "ci_low": cis[name][0], "ci_high": cis[name][1]}
    return out


def contrast_consistency(
    hateful_correct: np.ndarray,
    contrast_correct: np.ndarray,
    samples: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, object]:
    """Share of (hateful case, non-hateful contrast) pairs with BOTH right.

    One element per pair: whether the model got the hateful case right and
    whether it got its contrast right.

    >>> r = contrast_consistency(np.array([1, 1, 0, 1]), np.array([1, 0, 1, 1]), samples=10)
    >>> r["n_pairs"], r["both_correct"]["value"]
    (4, 50.0)
    """
    both = (np.asarray(hateful_correct) & np.asarray(contrast_correct)).astype(int)
    ones = np.ones_like(both)
    s = summarise(ones, both, ["accuracy"], samples, seed, level)
    return {
        "n_pairs": s["n"],
        "both_correct": s["accuracy"],
        "hateful_correct": pct(np.mean(hateful_correct)) if len(both) else None,
        "contrast_correct": pct(np.mean(contrast_correct)) if len(both) else None,
    }
