"""LIME's forward selection of features, the same features chosen with one
least-squares update per round instead of one scikit-learn fit per
candidate.

``lime.lime_base.LimeBase.forward_selection`` (lime 0.2.0.1), which
``LimeTextExplainer`` runs for ``num_features <= 6`` (the authors' 6),
adds features one at a time: in each round it fits ``Ridge(alpha=0)``
(weighted least squares with an intercept) on the chosen features plus each
candidate, scores each fit by its weighted R² and keeps the first candidate
with the highest score. That is ``num_features x words`` scikit-learn fits
per explained class, most of a LIME explanation's CPU time
(``benchmarks/records/lime_selection_2026-12-03.txt``).

The weighted R² of a least-squares fit is the share of the centred,
weighted labels' sum of squares that the chosen columns' span explains, so
a candidate's score is the current R² plus the gain of its column's
residual after projecting out the chosen columns: one matrix product per
round for all candidates. :func:`forward_selection` returns LIME's own
choice whenever the round's decision is clear; where it is not (two
candidates' scores within :data:`TIE` of each other, a candidate column
(nearly) in the chosen columns' span, or labels that do not vary) it runs
LIME's own loop, so the features chosen are LIME's in every case.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

# Two candidates' R² closer than this: the decision is left to LIME's own
# loop (its scores carry float error of order 1e-13; R² lies in [0, 1]).
TIE = 1e-8
# A candidate column whose residual keeps less than this share of its own
# (centred, weighted) sum of squares, or of the largest column's, lies
# (nearly) in the chosen columns' span or is (nearly) constant: its
# least-squares score is float noise in LIME's loop too.
COLLINEAR = 1e-8


def greedy_selection(data: np.ndarray, labels: np.ndarray, weights: np.ndarray, num_features: int) -> np.ndarray | None:
    """The features LIME's forward selection chooses, in its order, or
    None where a round's choice is not clear (see the module's note)."""
    x = np.asarray(data, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    if x.ndim != 2 or w.sum() <= 0:
        return None
    root = np.sqrt(w)
    xc = (x - (w @ x) / w.sum()) * root[:, None]
    yc = (y - (w @ y) / w.sum()) * root
    sst = float(yc @ yc)
    own = np.einsum("ij,ij->j", xc, xc)
    scale = max(float(own.max()), 1e-300)  # a column far below the others' spread is (nearly) constant
    if sst <= 1e-12 * max(float(w @ (y * y)), 1e-300):
        return None
    residual = xc.copy()  # each candidate's column with the chosen columns' span projected out
    used: list[int] = []
    free = np.ones(x.shape[1], dtype=bool)
    for _ in range(min(num_features, x.shape[1])):
        norms = np.einsum("ij,ij->j", residual, residual)
        if np.any(free & (norms <= COLLINEAR * np.maximum(own, scale))):
            return None
        gain = np.where(free, (residual.T @ yc) ** 2 / np.where(free, norms, 1.0) / sst, -np.inf)
        best = int(np.argmax(gain))  # the first of equal maxima, as LIME's strict ">"
        rest = np.delete(gain, best)
        if rest.size and np.isfinite(rest).any() and gain[best] - rest[np.isfinite(rest)].max() < TIE:
            return None
        used.append(best)
        free[best] = False
        q = residual[:, best] / np.sqrt(norms[best])
        residual -= np.outer(q, q @ residual)
    return np.array(used)


def forward_selection(lime_own: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """A drop-in for a ``LimeBase`` instance's ``forward_selection``:
    :func:`greedy_selection`, else ``lime_own`` (LIME's loop, bound to
    the instance) where a round's choice is not clear."""

    def select(data: np.ndarray, labels: np.ndarray, weights: np.ndarray, num_features: int) -> np.ndarray:
        chosen = greedy_selection(data, labels, weights, num_features)
        return lime_own(data, labels, weights, num_features) if chosen is None else chosen

    return select
