"""The two tests behind drift alerts, in numpy alone (a line install has no scipy).

* Kolmogorov-Smirnov, two samples: do a camera's recent scores come from the same
  distribution as the good scores the threshold was calibrated on? It looks at the whole
  distribution, so a shift that stays under the threshold (good parts scoring a little
  higher after a lighting change) is seen before it turns into false alarms. Under the
  null hypothesis its statistic does not depend on the score distribution, which is why
  one level holds for every profile.
* Binomial, one-sided: are more parts flagged in the window than the calibrated
  false-alarm rate allows? It reads only the verdicts, so it also covers a drift the
  scores' shape hides, and a run of real defects (worth a look too). The rate a
  threshold really gives is only known as far as the calibration set shows it: with 300
  good scores and a 1 % target, three of them lie above the threshold. Where the good
  scores are kept, the test therefore uses the rate's spread too (a beta-binomial:
  with ``j`` of ``n`` good scores above the threshold, the good mass above it is at most
  Beta(j + 1, n - j) distributed, whatever the score distribution); a plain binomial at
  the target rate fired on about twice its level (``benchmarks/drift.py``).

Both take batches (one row per window) so the benchmark runs many streams at once with
the very code the daemon runs.
"""

from __future__ import annotations

import math

import numpy as np

KS_TERMS = 100  # terms of the Kolmogorov series; they vanish long before this


def ks_statistics(reference: np.ndarray, windows: np.ndarray) -> np.ndarray:
    """The two-sample KS statistic of each row of ``windows`` (shape ``(B, m)``) against
    ``reference`` (shape ``(n,)``): the largest gap between the two empirical CDFs.

    The samples are pooled and sorted per row; each reference value steps the CDF gap up
    by ``1/n`` and each window value down by ``1/m`` (counted in integer units of
    ``1/(n m)``, so the sum is exact). Only the last of a run of equal values is a point
    where both CDFs are defined, so ties are read there alone."""
    windows = np.atleast_2d(np.asarray(windows, dtype=np.float64))
    reference = np.asarray(reference, dtype=np.float64)
    batch, m = windows.shape
    n = reference.size
    values = np.concatenate([np.broadcast_to(reference, (batch, n)), windows], axis=1)
    steps = np.concatenate([np.full(n, m, dtype=np.int64), np.full(m, -n, dtype=np.int64)])
    order = np.argsort(values, axis=1, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=1)
    gaps = np.cumsum(steps[order], axis=1)
    last_of_tie = np.ones_like(sorted_values, dtype=bool)
    last_of_tie[:, :-1] = sorted_values[:, 1:] != sorted_values[:, :-1]
    return np.where(last_of_tie, np.abs(gaps), 0).max(axis=1) / (n * m)


def ks_p_values(statistics: np.ndarray, n: int, m: int) -> np.ndarray:
    """Asymptotic p-values of two-sample KS statistics for sample sizes ``n`` and ``m``.

    The Kolmogorov distribution at ``lambda = (sqrt(ne) + 0.12 + 0.11 / sqrt(ne)) * D``
    with ``ne = n m / (n + m)`` (Stephens' correction, accurate to a few per cent of the
    p-value from ``ne`` about 4 on, far below the windows the daemon uses)."""
    ne = n * m / (n + m)
    root = math.sqrt(ne)
    lam = (root + 0.12 + 0.11 / root) * np.asarray(statistics, dtype=np.float64)
    k = np.arange(1, KS_TERMS + 1)
    signs = np.where(k % 2 == 1, 1.0, -1.0)
    terms = signs * np.exp(-2.0 * np.square(k) * np.square(lam)[..., None])
    p = 2.0 * terms.sum(axis=-1)
    # The series converges slowly near zero, where the p-value is 1 anyway.
    return np.clip(np.where(lam < 0.3, 1.0, p), 0.0, 1.0)


def binomial_upper_tail(trials: int, rate: float) -> np.ndarray:
    """``P(X >= k)`` for ``k = 0 .. trials`` when ``X ~ Binomial(trials, rate)``: the
    p-value of ``k`` flagged parts in a window, read from one table per window size."""
    k = np.arange(trials + 1)
    log_pmf = np.array(
        [
            math.lgamma(trials + 1) - math.lgamma(i + 1) - math.lgamma(trials - i + 1)
            + i * math.log(rate) + (trials - i) * math.log1p(-rate)
            for i in k
        ]
    )  # fmt: skip
    return _upper_tail(np.exp(log_pmf))


def beta_binomial_upper_tail(trials: int, above: int, calibration: int) -> np.ndarray:
    """``P(X >= k)`` for ``k = 0 .. trials`` when ``above`` of ``calibration`` good
    scores lay above the threshold: ``X ~ Binomial(trials, p)`` with the good mass above
    the threshold ``p`` at most ``Beta(above + 1, calibration - above)`` (the mass above
    the order statistic with ``above`` scores over it), so the tail is conservative."""
    a, b = above + 1.0, float(max(calibration - above, 1))

    def log_beta(x: float, y: float) -> float:
        return math.lgamma(x) + math.lgamma(y) - math.lgamma(x + y)

    log_pmf = np.array(
        [
            math.lgamma(trials + 1) - math.lgamma(i + 1) - math.lgamma(trials - i + 1)
            + log_beta(i + a, trials - i + b) - log_beta(a, b)
            for i in range(trials + 1)
        ]
    )  # fmt: skip
    return _upper_tail(np.exp(log_pmf))


def _upper_tail(pmf: np.ndarray) -> np.ndarray:
    return np.clip(np.cumsum(pmf[::-1])[::-1], 0.0, 1.0)
