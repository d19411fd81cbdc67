"""The paired test behind every verdict of ``diff``: is model B's accuracy
on a set of cases different from model A's, beyond the noise of which
templates and fillers the suite happened to contain?

One procedure gives the p-value, the interval and (through Holm's step-down
on the p-values) the flag, so they always agree:

- **Statistic.** ``T = sum of d`` over the cases, ``d = correct_B -
  correct_A`` (-1, 0 or 1); the accuracy difference is ``T / n``.
- **Without crossed fillers: random signs at the templates.** The cases
  are grouped by their template (``rows``: every case of a template moves
  together); a draw gives every template a random sign and adds the signed
  sums, ``T* = sum_t e_t R_t`` (``R_t``: the sum of ``d`` over template
  t). This is the paired sign-flip permutation test at the template level,
  exact under the null that A and B are exchangeable within each template,
  enumerated exhaustively when there are at most :data:`EXACT_UNITS`
  templates, else ``samples`` random draws.
- **Crossed with fillers (slurs): a studentized test.** Where the suite
  crosses its templates with fillers (``cols``), the difference varies by
  template and by filler. Random signs on both would count the mean
  difference itself as noise (an unstudentized test of a crossed design
  has almost no power with 8 templates); so the statistic is studentized:
  ``t = T / sqrt(V)``, with ``V`` the moment estimate of ``Var(T)`` for a
  crossed design from the centred differences ``e = d - T/n`` (Owen 2007's
  pigeonhole argument): ``sum R_t^2 + sum C_f^2 - sum e^2`` over the sums
  per template and per filler, never below either one-way estimate
  (``sum R_t^2``, ``sum C_f^2``) nor below one case's variance (1). Its
  reference distribution is Student's t with ``min(templates, fillers) -
  1`` degrees of freedom (the axis with fewer units limits what is known).
- **p-value.** Sign flips: the share of draws with ``|T*| >= |T|``; with
  random draws ``(1 + count) / (1 + samples)`` (never 0, valid at any
  number of draws). Crossed: two-sided from Student's t.
- **Interval.** The differences ``delta`` the same test does not reject.
  Sign flips: each case's ``d`` shifted by ``delta`` (``T(delta) = T - n
  delta``, every sum shifted likewise), the same draws, bisection for the
  two ends where the p-value crosses ``alpha``. Crossed: ``T/n +- t_crit
  sqrt(V) / n``. So the interval excludes zero exactly when the p-value is
  at most ``alpha`` (tested).
- **Holm.** :func:`holm_adjust` on the p-values as they are reported
  (rounded to :data:`P_DIGITS` decimals): flagged when the adjusted p-value
  is at most ``alpha``; ties get the same adjusted value, whatever their
  names.

The level and power of the whole procedure are measured by simulation in
``benchmarks/bench_paired_test.py`` (its record is under
``benchmarks/records/``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

EXACT_UNITS = 14  # at most this many sign units: every one of the 2^units sign vectors is used
P_DIGITS = 6  # decimals of a reported p-value (Holm runs on the reported values)
CHUNK = 4096  # sign vectors per block (memory: CHUNK x units)
BISECTIONS = 30  # halvings of [-1, 1] for an interval's end: far below the 0.1 points reported


@dataclass(frozen=True)
class PairedResult:
    """One paired test: counts, the difference, its p-value and interval
    (``method``: ``sign-flip`` or ``crossed-t``; ``df`` for the latter)."""

    n: int
    correct_a: int
    correct_b: int
    p_value: float
    ci_low: float  # shares (B - A), not percent
    ci_high: float
    n_templates: int
    n_fillers: int
    draws: int
    exact: bool
    method: str = "sign-flip"
    df: int | None = None

    @property
    def difference(self) -> float:
        """B's accuracy minus A's, a share, from the counts."""
        return (self.correct_b - self.correct_a) / self.n if self.n else 0.0


def _codes(values: np.ndarray | None, n: int) -> tuple[np.ndarray, int]:
    """Codes 0..K-1 (-1 kept: no unit); None: every case its own unit."""
    if values is None:
        return np.arange(n), n
    values = np.asarray(values)
    keep = values >= 0
    out = np.full(n, -1, dtype=np.int64)
    if keep.any():
        _, inverse = np.unique(values[keep], return_inverse=True)
        out[keep] = inverse.reshape(-1)
    return out, int(out.max()) + 1 if keep.any() else 0


def _signs(units: int, samples: int, seed: int) -> tuple[np.ndarray, bool]:
    """(draws, units) matrix of +-1: every sign vector when ``units`` is at
    most :data:`EXACT_UNITS`, else ``samples`` seeded random draws."""
    if units <= EXACT_UNITS:
        grid = (np.arange(2**units)[:, None] >> np.arange(units)[None, :]) & 1
        return (1 - 2 * grid).astype(np.int8), True
    rng = np.random.default_rng(seed)
    return (1 - 2 * rng.integers(0, 2, size=(samples, units), dtype=np.int8)).astype(np.int8), False


def _project(signs: np.ndarray, sums: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``signs @ sums`` and ``signs @ sizes`` in blocks (the draws' signed
    sums at delta = 0, and how they move with delta)."""
    a = np.empty(len(signs))
    b = np.empty(len(signs))
    for start in range(0, len(signs), CHUNK):
        block = signs[start : start + CHUNK].astype(np.float64)
        a[start : start + CHUNK] = block @ sums
        b[start : start + CHUNK] = block @ sizes
    return a, b


class _Test:
    """The sign draws of one set of cases (templates as the units), ready
    to give the p-value at any shift ``delta`` in O(draws)."""

    j = 0  # no filler axis

    def __init__(self, d: np.ndarray, rows: np.ndarray | None, samples: int, seed: int):
        n = len(d)
        self.n, self.total = n, float(d.sum())
        r, self.k = _codes(rows, n)
        sums = np.bincount(r, weights=d.astype(np.float64), minlength=self.k)
        sizes = np.bincount(r, minlength=self.k).astype(np.float64)
        signs, self.exact = _signs(self.k, samples, seed)
        self.draws = len(signs)
        self.a, self.b = _project(signs, sums, sizes)  # T*(delta) = a - delta * b

    def p(self, delta: float = 0.0) -> float:
        """The two-sided p-value of ``difference == delta``."""
        observed = abs(self.total - delta * self.n)
        drawn = np.abs(self.a - delta * self.b)
        hits = int((drawn >= observed - 1e-9 * max(1.0, observed)).sum())
        if self.exact:
            return hits / self.draws
        return (1 + hits) / (1 + self.draws)

    def bound(self, alpha: float, side: int) -> float:
        """The end of the interval on ``side`` (-1 low, +1 high): bisection
        between an accepted shift and the edge of [-1, 1]."""
        inside = self.total / self.n if self.n else 0.0
        edge = float(side)
        if side * (0.0 - inside) > 0 and self.p(0.0) > alpha:
            inside = 0.0  # zero is accepted: the interval reaches at least to it
        if self.p(edge) > alpha:
            return edge
        for _ in range(BISECTIONS):
            mid = (inside + edge) / 2
            if self.p(mid) > alpha:
                inside = mid
            else:
                edge = mid
        return inside


class _Crossed:
    """The studentized test of a crossed design (templates x fillers): the
    same ``p`` and ``bound`` as :class:`_Test`, from Student's t."""

    exact = False
    draws = 0

    def __init__(self, d: np.ndarray, rows: np.ndarray | None, cols: np.ndarray):
        n = len(d)
        self.n, self.total = n, float(d.sum())
        r, self.k = _codes(rows, n)
        c, self.j = _codes(cols, n)
        e = d.astype(np.float64) - (self.total / n if n else 0.0)
        has = c >= 0
        rr = float((np.bincount(r, weights=e, minlength=self.k) ** 2).sum())
        cc = float((np.bincount(c[has], weights=e[has], minlength=self.j) ** 2).sum())
        self.var = max(rr + cc - float((e[has] ** 2).sum()), rr, cc, 1.0)
        self.df = max(min(self.k, self.j) - 1, 1)

    def p(self, delta: float = 0.0) -> float:
        from scipy.stats import t as student

        return float(2 * student.sf(abs(self.total - delta * self.n) / np.sqrt(self.var), self.df))

    def bound(self, alpha: float, side: int) -> float:
        from scipy.stats import t as student

        half = float(student.ppf(1 - alpha / 2, self.df)) * np.sqrt(self.var) / self.n
        return float(np.clip(self.total / self.n + side * half, -1.0, 1.0))


def paired_test(
    correct_a: np.ndarray,
    correct_b: np.ndarray,
    rows: np.ndarray | None = None,
    cols: np.ndarray | None = None,
    samples: int = 20000,
    seed: int = 0,
    alpha: float = 0.05,
) -> tuple[PairedResult, "_Test | _Crossed"]:
    """The paired test of B against A on these cases (``rows``: a template
    code per case, None: every case its own; ``cols``: a filler code per
    case, -1 where a case has none, None: no fillers), with the interval at
    ``1 - alpha``; also returns the prepared draws (for intervals at other
    levels: :func:`interval`).

    >>> a = np.array([1, 1, 1, 1, 0, 1]); b = np.array([0, 0, 0, 0, 0, 1])
    >>> r, _ = paired_test(a, b)
    >>> r.difference, r.p_value, r.exact
    (-0.6666666666666666, 0.125, True)
    """
    ca, cb = np.asarray(correct_a, dtype=np.int64), np.asarray(correct_b, dtype=np.int64)
    crossed = cols is not None and (np.asarray(cols) >= 0).any()
    test: _Test | _Crossed = _Crossed(cb - ca, rows, np.asarray(cols)) if crossed else _Test(cb - ca, rows, samples, seed)
    low, high = interval(test, alpha)
    return PairedResult(
        n=len(ca),
        correct_a=int(ca.sum()),
        correct_b=int(cb.sum()),
        p_value=round(test.p(0.0), P_DIGITS),
        ci_low=low,
        ci_high=high,
        n_templates=test.k,
        n_fillers=test.j,
        draws=test.draws,
        exact=test.exact,
        method="crossed-t" if crossed else "sign-flip",
        df=test.df if crossed else None,
    ), test


def interval(test: "_Test | _Crossed", alpha: float) -> tuple[float, float]:
    """The shifts the test does not reject at ``alpha`` (shares)."""
    if not test.n:
        return 0.0, 0.0
    return test.bound(alpha, -1), test.bound(alpha, +1)


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (same order as given): the k-th
    smallest (1-based, of m) times ``m - k + 1``, made non-decreasing, at
    most 1. Ties get the same value whatever their order.

    >>> holm_adjust([0.01, 0.04, 0.03, 0.5])
    [0.04, 0.09, 0.09, 0.5]
    """
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    if not m:
        return []
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = stepped
    return [round(float(v), P_DIGITS) for v in out]


def holm_levels(p_values: Sequence[float], alpha: float) -> list[float]:
    """Each test's Holm threshold at its rank (``alpha / (m - rank)``,
    0-based; tied p-values share the threshold of the first of them)."""
    p = np.asarray(p_values, dtype=float)
    m = len(p)
    out = []
    for value in p:
        rank = int((p < value).sum())
        out.append(alpha / (m - rank))
    return out
