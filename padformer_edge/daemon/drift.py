"""Drift watch: does each camera still see the parts its profile was calibrated on?

Lighting, a moved camera or a new supplier shifts good parts' scores long before every
part is flagged; the false-alarm rate creeps up until operators stop reading alerts.
Per camera (and profile), the monitor collects ``window`` scores, tests them against
the profile's calibration (``drift_tests``) and starts a fresh window: windows do not
overlap, so each image is tested once and the per-image false-alert rate follows from
the per-window level (``DriftConfig``). The worker turns a finding into a ``drift``
event and alert, unless one for that camera is still open (not acknowledged).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.daemon.drift_tests import (
    beta_binomial_upper_tail,
    binomial_upper_tail,
    ks_p_values,
    ks_statistics,
)
from padformer_edge.daemon.settings import DriftConfig


@dataclass(frozen=True)
class DriftFinding:
    """One test that rejected "no change" on one window."""

    kind: str  # "ks" (score distribution) or "binomial" (flagged rate)
    statistic: float
    p_value: float
    level: float
    window_size: int
    reason: str


class WindowTests:
    """The two tests for one profile's calibration at one window size and level; the
    binomial tail table is computed once, not per window."""

    def __init__(
        self,
        good_scores: list[float] | None,
        target_fpr: float,
        window: int,
        level: float,
        threshold: float | None = None,
    ) -> None:
        self.reference = None if not good_scores else np.sort(np.asarray(good_scores))
        self.target_fpr, self.window, self.level = target_fpr, window, level
        if self.reference is not None and threshold is not None:
            # the rate the threshold gives, as far as the calibration set shows it
            above = int(is_anomalous(self.reference, threshold).sum())
            self.tail = beta_binomial_upper_tail(window, above, self.reference.size)
            self.expected = f"{above} of {self.reference.size} calibration scores above it"
        else:
            self.tail = binomial_upper_tail(window, target_fpr)
            self.expected = f"a calibrated false-alarm rate of {target_fpr:g}"

    def judge(self, scores: np.ndarray, flagged: int) -> list[DriftFinding]:
        """The findings of one full window, strongest (smallest p-value) first."""
        found = []
        if self.reference is not None:
            statistic = float(ks_statistics(self.reference, scores)[0])
            p = float(ks_p_values(np.array([statistic]), self.reference.size, scores.size)[0])
            if p < self.level:
                median, calibrated = float(np.median(scores)), float(np.median(self.reference))
                found.append(DriftFinding(
                    "ks", statistic, p, self.level, scores.size,
                    f"the last {scores.size} scores differ from the {self.reference.size} "
                    f"calibration scores (Kolmogorov-Smirnov D {statistic:.3f}, p {p:.2g} < "
                    f"{self.level:.2g}; median {median:.4g} against {calibrated:.4g})",
                ))  # fmt: skip
        p = float(self.tail[flagged])
        if p < self.level:
            found.append(DriftFinding(
                "binomial", flagged / scores.size, p, self.level, scores.size,
                f"{flagged} of the last {scores.size} parts were flagged, against "
                f"{self.expected} (binomial p {p:.2g} < "
                f"{self.level:.2g}): good parts may have drifted, or defects are coming in",
            ))  # fmt: skip
        return sorted(found, key=lambda f: f.p_value)


@dataclass
class CameraWindow:
    """The scores and verdicts collected for one camera since its last test."""

    tests: WindowTests
    scores: list[float] = field(default_factory=list)
    flagged: int = 0


class DriftMonitor:
    """Windows per (camera, profile); ``observe`` returns findings when one fills."""

    def __init__(self, config: DriftConfig) -> None:
        self.config = config
        self._windows: dict[tuple[str, str], CameraWindow] = {}
        self._lock = threading.Lock()  # ``forget`` comes from the profile reloader's thread

    def observe(
        self,
        camera: str,
        product: str,
        score: float,
        anomalous: bool,
        good_scores: list[float] | None,
        target_fpr: float,
        threshold: float | None = None,
    ) -> list[DriftFinding]:
        """Add one result; the findings of the window it completes (often none)."""
        if not self.config.enabled:
            return []
        key = (camera, product)
        with self._lock:
            window = self._windows.get(key)
            if window is None:
                tests = WindowTests(
                    good_scores, target_fpr, self.config.window, self.config.level, threshold
                )
                window = self._windows[key] = CameraWindow(tests)
        window.scores.append(score)
        window.flagged += int(anomalous)
        if len(window.scores) < self.config.window:
            return []
        findings = window.tests.judge(np.asarray(window.scores), window.flagged)
        window.scores, window.flagged = [], 0
        return findings

    def forget(self, cameras: Iterable[str]) -> None:
        """Drop the windows of ``cameras`` (their profile's version changed: the window
        built on the old calibration would test the new scores against the old ones)."""
        gone = set(cameras)
        with self._lock:
            for key in [k for k in self._windows if k[0] in gone]:
                del self._windows[key]
