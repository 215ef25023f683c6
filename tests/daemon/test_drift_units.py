"""The drift tests' arithmetic against SciPy's (a dev dependency, never a line one), and
the monitor's windows: what fires, what does not, and when."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from padformer_edge.daemon.drift import DriftMonitor
from padformer_edge.daemon.drift_statistics import (
    beta_binomial_upper_tail,
    binomial_upper_tail,
    ks_p_values,
    ks_statistics,
)
from padformer_edge.daemon.settings import DriftConfig
from padformer_edge.profiles.thresholds import false_alarm_threshold

stats = pytest.importorskip("scipy.stats")  # in .[dev] (the eval extra); CI installs it


def test_ks_statistic_and_p_value_match_scipy_with_ties_and_shifts() -> None:
    rng = np.random.default_rng(3)
    reference = rng.gamma(4.0, size=300)
    windows = rng.gamma(4.0, size=(6, 100)) + np.array([0, 0.1, 0.3, 0.6, 1.0, 3.0])[:, None]
    windows[0, :20] = reference[:20]  # ties between the samples
    windows[1, :10] = windows[1, 0]  # ties within the window
    found = ks_statistics(reference, windows)
    p = ks_p_values(found, reference.size, 100)
    for row, statistic, p_value in zip(windows, found, p, strict=True):
        exact = stats.ks_2samp(reference, row)
        assert statistic == pytest.approx(exact.statistic, abs=1e-12)
        asymptotic = stats.ks_2samp(reference, row, method="asymp").pvalue
        # Stephens' corrected series sits between SciPy's exact and plain asymptotic value
        assert p_value == pytest.approx(exact.pvalue, rel=0.15, abs=1e-9) or p_value == (
            pytest.approx(asymptotic, rel=0.15, abs=1e-9)
        )


def test_binomial_tail_matches_scipy() -> None:
    for trials, rate in [(100, 0.01), (50, 0.05), (1000, 0.001)]:
        tail = binomial_upper_tail(trials, rate)
        k = np.arange(trials + 1)
        np.testing.assert_allclose(tail, stats.binom.sf(k - 1, trials, rate), rtol=1e-9,
                                   atol=1e-300)  # fmt: skip


def test_beta_binomial_tail_matches_scipy() -> None:
    for trials, above, calibration in [(100, 3, 300), (50, 0, 60), (200, 10, 1000)]:
        tail = beta_binomial_upper_tail(trials, above, calibration)
        k = np.arange(trials + 1)
        exact = stats.betabinom.sf(k - 1, trials, above + 1, calibration - above)
        np.testing.assert_allclose(tail, exact, rtol=1e-8, atol=1e-12)  # SciPy: 1 - cdf
        # heavier than the binomial at the same mean rate where tests decide (p < 5 %):
        # the spread of the rate the calibration set leaves is counted
        plain = binomial_upper_tail(trials, (above + 1) / (calibration + 1))
        assert (tail[plain < 0.05] > plain[plain < 0.05]).all()


def _feed(monitor: DriftMonitor, scores: np.ndarray, flagged: np.ndarray, good, fpr=0.01,
          threshold=None):  # fmt: skip
    """Every window's findings, by the index of the image that completed it."""
    out = {}
    for i, (score, anomalous) in enumerate(zip(scores, flagged, strict=True)):
        found = monitor.observe("cam", "bolt", float(score), bool(anomalous), good, fpr,
                                threshold)  # fmt: skip
        if found:
            out[i] = found
    return out


def test_a_steady_line_fires_at_about_the_level_and_a_shift_fires_at_once() -> None:
    """Unshifted windows fire at most at the stated level (both tests together), averaged
    over calibration sets (one set alone can sit above or below it: see
    benchmarks/drift.py); a one-standard-deviation shift fires on the first window."""
    rng = np.random.default_rng(5)
    config = DriftConfig(window=100)
    false = windows = 0
    for _ in range(200):  # 200 calibration sets, 5 unshifted windows each
        good = rng.normal(10.0, 1.0, 300)
        threshold = false_alarm_threshold(good, 0.01).value
        scores = rng.normal(10.0, 1.0, 500)
        found = _feed(DriftMonitor(config), scores, scores > threshold, good.tolist(), 0.01,
                      threshold)  # fmt: skip
        false += len(found)
        windows += 5
    stated = config.per_window * windows  # the two tests share it, 1000 windows
    assert false <= 2 * stated, (false, windows)
    good = rng.normal(10.0, 1.0, 300).tolist()
    shifted = rng.normal(11.0, 1.0, 100)
    found = _feed(DriftMonitor(config), shifted, np.zeros(100, bool), good)
    assert list(found) == [99]  # tested once, when the window fills
    (finding,) = found[99]
    assert finding.kind == "ks" and finding.p_value < config.level(2)
    assert "100 scores differ from the 300 calibration scores" in finding.reason


def test_too_many_flagged_parts_fire_the_binomial_test_without_calibration_scores() -> None:
    monitor = DriftMonitor(DriftConfig(window=100))
    scores = np.full(100, 5.0)
    flagged = np.zeros(100, bool)
    flagged[:4] = True  # 4 of 100 at a 1 % target: p 0.018, not below 0.01 (the one test
    # a profile without good scores or image statistics runs has the window's whole share)
    assert _feed(monitor, scores, flagged, None) == {}
    flagged[:6] = True  # 6 of 100: p 0.0005
    (finding,) = _feed(monitor, scores, flagged, None)[99]
    assert finding.kind == "binomial" and finding.statistic == 0.06 and finding.level == 0.01
    assert finding.p_value == pytest.approx(stats.binom.sf(5, 100, 0.01))


def test_cameras_have_their_own_windows_and_a_disabled_watch_never_fires() -> None:
    good = list(np.linspace(0.0, 1.0, 200))
    monitor = DriftMonitor(DriftConfig(window=10))
    for _ in range(9):
        assert monitor.observe("a", "bolt", 50.0, False, good, 0.01) == []
        assert monitor.observe("b", "bolt", 50.0, False, good, 0.01) == []
    assert monitor.observe("a", "bolt", 50.0, False, good, 0.01)[0].kind == "ks"
    off = DriftMonitor(DriftConfig(enabled=False, window=10))
    assert all(off.observe("a", "bolt", 50.0, True, good, 0.01) == [] for _ in range(30))


def test_a_level_that_leaves_no_room_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"false_alert_rate x window must be at most 0\.5"):
        DriftConfig(window=1000, false_alert_rate=0.001)
    config = DriftConfig()
    assert config.per_window == config.false_alert_rate * config.window
    assert config.level(5) == config.per_window / 5
