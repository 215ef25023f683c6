"""Drift watch: does each camera still see the parts its profile was calibrated on?

Lighting, a moved camera or a new supplier shifts good parts' scores long before every
part is flagged; the false-alarm rate creeps up until operators stop reading alerts.
Per camera (and profile), the monitor collects ``window`` scores, with each image's
luminance percentiles (``image_stats``), tests them against the profile's calibration
(``drift_statistics``) and starts a fresh window: windows do not overlap, so each image is
tested once and the per-image false-alert rate follows from the per-window level
(``DriftConfig``). The image tests are there because a model's scores can be blind to a
change the line must still hear about: a brighter lamp, another camera. The worker turns
a finding into a ``drift`` event and alert, unless one for that camera is still open
(not acknowledged).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.daemon.drift_statistics import (
    beta_binomial_upper_tail,
    binomial_upper_tail,
    ks_p_values,
    ks_statistics,
)
from padformer_edge.daemon.settings import DriftConfig
from padformer_edge.images.image_stats import BY_NAME, NAMES, known_statistics

CHANGE_NAMED = 0.005
"""A median moved by less than this share is not called brighter or darker: the test saw
the statistic spread differently, not shift."""


@dataclass(frozen=True)
class DriftFinding:
    """One test that rejected "no change" on one window."""

    kind: str  # "ks" (score distribution), "binomial" (flagged rate) or "image"
    statistic: float
    p_value: float
    level: float
    window_size: int
    reason: str
    measure: str | None = None
    """The image statistic an ``image`` finding tested (``image_stats.NAMES``)."""


class WindowTests:
    """The tests for one profile's calibration at one window size; the binomial tail
    table and the sorted references are made once, not per window.

    Which tests run follows from what the calibration kept: the binomial test always,
    the score test with its good scores, one image test per statistic it recorded. The
    window's false-alert share (``DriftConfig.per_window``) is split evenly among them,
    so adding the image tests keeps the stated rate; a profile without image statistics
    gives its two score tests the share they had before."""

    def __init__(
        self,
        config: DriftConfig,
        good_scores: Sequence[float] | None,
        target_fpr: float,
        threshold: float | None = None,
        good_image_stats: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        self.reference = None if not good_scores else np.sort(np.asarray(good_scores))
        self.images = {name: np.sort(values)
                       for name, values in known_statistics(good_image_stats).items()}  # fmt: skip
        self.columns = [NAMES.index(name) for name in self.images]
        self.tests = (self.reference is not None) + 1 + len(self.images)
        self.target_fpr, self.window = target_fpr, config.window
        self.level = config.level(self.tests)
        if self.reference is not None and threshold is not None:
            # the rate the threshold gives, as far as the calibration set shows it
            above = int(is_anomalous(self.reference, threshold).sum())
            self.tail = beta_binomial_upper_tail(self.window, above, self.reference.size)
            self.expected = f"{above} of {self.reference.size} calibration scores above it"
        else:
            self.tail = binomial_upper_tail(self.window, target_fpr)
            self.expected = f"a calibrated false-alarm rate of {target_fpr:g}"

    def score_p_values(self, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """KS statistics and p-values of score windows (rows) against the good scores."""
        assert self.reference is not None
        found = ks_statistics(self.reference, windows)
        return found, ks_p_values(found, self.reference.size, windows.shape[-1])

    def image_p_values(self, windows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """KS statistics and p-values, shape ``(B, len(self.images))``, of windows of
        image statistics (shape ``(B, m, len(NAMES))``) against the calibration's."""
        batch, m = windows.shape[:2]
        found = np.empty((batch, len(self.images)))
        p = np.empty_like(found)
        for i, (column, reference) in enumerate(zip(self.columns, self.images.values(),
                                                    strict=True)):  # fmt: skip
            found[:, i] = ks_statistics(reference, windows[:, :, column])
            p[:, i] = ks_p_values(found[:, i], reference.size, m)
        return found, p

    def judge(
        self, scores: np.ndarray, flagged: int, statistics: np.ndarray | None = None
    ) -> list[DriftFinding]:
        """The findings of one full window, strongest (smallest p-value) first;
        ``statistics`` are its images' (one row each, ``image_stats.NAMES`` order), None
        when they were not computed."""
        found = []
        if self.reference is not None:
            statistic, p = (float(v[0]) for v in self.score_p_values(scores[None, :]))
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
        if self.images and statistics is not None:
            distances, ps = self.image_p_values(statistics[None, :, :])
            for i, (name, column) in enumerate(zip(self.images, self.columns, strict=True)):
                if ps[0, i] < self.level:
                    found.append(self.image_finding(
                        name, statistics[:, column], float(distances[0, i]), float(ps[0, i])
                    ))  # fmt: skip
        return sorted(found, key=lambda f: f.p_value)

    def image_finding(
        self, name: str, values: np.ndarray, distance: float, p: float
    ) -> DriftFinding:
        """An image statistic's finding, its reason saying which way the images moved and
        by how much (window median against calibration median), in words an operator
        reads as "the lamp or the camera changed"."""
        measure, reference = BY_NAME[name], self.images[name]
        now, then = float(np.median(values)), float(np.median(reference))
        change = now / then - 1.0 if then > 0 else math.copysign(math.inf, now - then)
        test = (f"{measure.label} {now:.1f} against {then:.1f}; the last {values.size} "
                f"images against the {reference.size} calibration images, Kolmogorov-Smirnov "
                f"D {distance:.3f}, p {p:.2g} < {self.level:.2g}")  # fmt: skip
        if abs(change) >= CHANGE_NAMED:
            way = "brighter" if change > 0 else "darker"
            size = f"{abs(change):.0%} " if math.isfinite(change) else ""
            what = f"images {size}{way}{measure.where} than at calibration"
        else:  # the spread changed, not the middle
            what = f"images' {measure.label} spread differently than at calibration"
        return DriftFinding("image", distance, p, self.level, values.size,
                            f"{what} ({test}): the lighting or the camera may have changed",
                            measure=name)  # fmt: skip


@dataclass
class CameraWindow:
    """The scores, verdicts and image statistics collected for one camera since its
    last test."""

    tests: WindowTests
    scores: list[float] = field(default_factory=list)
    flagged: int = 0
    images: list[Sequence[float]] = field(default_factory=list)


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
        good_scores: Sequence[float] | None,
        target_fpr: float,
        threshold: float | None = None,
        *,
        statistics: Sequence[float] | None = None,
        good_image_stats: Mapping[str, Sequence[float]] | None = None,
    ) -> list[DriftFinding]:
        """Add one result (with its image's ``image_stats.image_statistics`` when the
        profile kept ``good_image_stats`` to test them against); the findings of the
        window it completes (often none)."""
        if not self.config.enabled:
            return []
        key = (camera, product)
        with self._lock:
            window = self._windows.get(key)
            if window is None:
                tests = WindowTests(self.config, good_scores, target_fpr, threshold,
                                    good_image_stats)  # fmt: skip
                window = self._windows[key] = CameraWindow(tests)
        window.scores.append(score)
        window.flagged += int(anomalous)
        if statistics is not None:
            window.images.append(statistics)
        if len(window.scores) < self.config.window:
            return []
        # every image of the window measured, or the image tests wait for the next one
        images = np.asarray(window.images) if len(window.images) == len(window.scores) else None
        findings = window.tests.judge(np.asarray(window.scores), window.flagged, images)
        window.scores, window.flagged, window.images = [], 0, []
        return findings

    def forget(self, cameras: Iterable[str]) -> None:
        """Drop the windows of ``cameras`` (their profile's version changed: the window
        built on the old calibration would test the new scores against the old ones)."""
        gone = set(cameras)
        with self._lock:
            for key in [k for k in self._windows if k[0] in gone]:
                del self._windows[key]
