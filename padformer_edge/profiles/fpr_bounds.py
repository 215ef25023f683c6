"""What false-alarm rate a threshold promises, given the good scores it was set on.

A threshold set on ``n`` held-out good images is a guess about good parts to come; with a
dozen images the guess is loose (issue 51: 12 calibration images for a 10 % target, and
35 % of fresh good views flagged). The looseness has an exact answer that needs no
assumption about the score distribution beyond its being continuous: if ``m`` of the
``n`` calibration scores lie above the threshold, the threshold sits at or above the
``(n - m)``-th order statistic, and ``1 - F`` at the ``k``-th order statistic of ``n``
draws is Beta(``n - k + 1``, ``k``) distributed whatever ``F`` is. So the rate ``p`` the
threshold lets through is at most the ``confidence`` quantile of Beta(``m + 1``,
``n - m``) with that confidence, and at least the ``1 - confidence`` quantile of
Beta(``m``, ``n - m + 1``) (the Clopper-Pearson bounds of ``m`` exceedances in ``n``).

For whole-number parameters a Beta quantile is found from the binomial distribution
(``P(Beta(a, b) <= x) = P(Binomial(a + b - 1, x) >= a)``) by bisection: exact to the
bisection's tolerance, and no SciPy on a line PC.

``upper_bound_threshold`` turns this around: the lowest threshold whose upper bound is
within the target, that is the order statistic with the most exceedances the target
allows. The fewest images for which any threshold can promise the target (the highest
score as the threshold, ``1 - (1 - confidence) ** (1 / n)`` within it) is
``thresholds.good_images_needed``: 29 for 10 %, 59 for 5 %, 299 for 1 %.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from padformer_edge.anomaly import is_anomalous

BISECTION_STEPS = 60  # halves [0, 1] to 2**-60: far below any rate worth printing


def _log_terms(n: int, p: float, indices: range) -> list[float]:
    log_p, log_q = math.log(p), math.log1p(-p)
    return [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p
        + (n - i) * log_q
        for i in indices
    ]  # fmt: skip


def _sum_exp(terms: list[float]) -> float:
    top = max(terms)
    return math.exp(top) * math.fsum(math.exp(t - top) for t in terms)


def binomial_at_least(n: int, p: float, k: int) -> float:
    """``P(Binomial(n, p) >= k)``, in log space so large ``n`` cannot underflow, over the
    shorter of the two tails (a bound's ``k`` is small beside ``n``: a few terms)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    if k <= n - k + 1:  # the lower tail is the shorter: one minus it
        return min(1.0, max(0.0, 1.0 - _sum_exp(_log_terms(n, p, range(k)))))
    return min(1.0, _sum_exp(_log_terms(n, p, range(k, n + 1))))


def beta_quantile(q: float, a: int, b: int) -> float:
    """The ``q`` quantile of Beta(``a``, ``b``) for whole ``a, b >= 1``."""
    low, high = 0.0, 1.0
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2
        if binomial_at_least(a + b - 1, middle, a) < q:
            low = middle
        else:
            high = middle
    return (low + high) / 2


@dataclass(frozen=True)
class RateBounds:
    """The false-alarm rate a threshold promises: between ``low`` and ``high``, each end
    holding with ``confidence`` (together a ``2 * confidence - 1`` interval), from
    ``exceeding`` of ``count`` calibration scores above the threshold."""

    count: int
    exceeding: int
    low: float
    high: float
    confidence: float


def rate_bounds(good: np.ndarray, threshold: float, confidence: float) -> RateBounds:
    """The bounds of the rate ``threshold`` lets through, from the good scores ``good``
    (the verdict rule ``score > threshold`` counts the exceedances)."""
    n = int(good.size)
    m = int(is_anomalous(good, threshold).sum())
    low = 0.0 if m == 0 else beta_quantile(1.0 - confidence, m, n - m + 1)
    high = 1.0 if m == n else beta_quantile(confidence, m + 1, n - m)
    return RateBounds(n, m, low, high, confidence)


def upper_bound_threshold(good: np.ndarray, target_fpr: float, confidence: float) -> float | None:
    """The lowest threshold at one of the good scores whose rate's upper bound is within
    ``target_fpr``: the score with the most others above it that the target allows.
    ``None`` when even the highest score cannot promise it (too few images)."""
    n = int(good.size)
    ordered = np.sort(good)
    allowed = None
    for m in range(n):  # the bound grows with m: stop at the first one over the target
        if beta_quantile(confidence, m + 1, n - m) > target_fpr:
            break
        allowed = m
    if allowed is None:
        return None
    return float(ordered[n - allowed - 1])  # at most ``allowed`` scores lie above it
