"""The image half of the drift watch: the luminance percentiles themselves, and the
monitor on streams of real (OpenCV-drawn) images of a part in random poses: a 20 %
brighter or darker lamp raises an ``image`` finding within the windows expected, a
steady line raises none, and the window's false-alert share is split among its tests."""

from __future__ import annotations

import re

import numpy as np
import pytest

from padformer_edge.daemon.drift import DriftMonitor, WindowTests
from padformer_edge.daemon.settings import DriftConfig
from padformer_edge.images.image_stats import (
    MAX_PIXELS,
    NAMES,
    image_statistics,
    known_statistics,
    statistics_table,
)
from tests.detect_images import brighter, posed_part

CALIBRATION = 200
STREAM = 300


def test_percentiles_read_each_level_as_spread_over_its_width() -> None:
    """Half the pixels at 100, half at 200: the 10th percentile lies a fifth into level
    100 ([99.5, 100.5]), the median at its top, the 90th four fifths into level 200."""
    image = np.full((10, 20, 3), 100, np.uint8)
    image[:, 10:] = 200
    assert image_statistics(image) == pytest.approx((99.7, 100.5, 200.3), abs=1e-9)
    grey = image[:, :, 0]
    assert image_statistics(grey) == image_statistics(image)  # grey in, same numbers


def test_a_large_frame_is_read_on_a_grid_of_at_most_max_pixels() -> None:
    """A frame of 4 x 4 blocks, each one pixel of a frame of MAX_PIXELS: the grid picks
    one pixel per block, so the statistics are the small frame's exactly."""
    side = int(np.sqrt(MAX_PIXELS))
    small = np.random.default_rng(0).integers(0, 256, (side, side, 3), dtype=np.uint8)
    large = np.repeat(np.repeat(small, 4, axis=0), 4, axis=1)
    assert image_statistics(large) == image_statistics(small)


def _stream(change: float, start: int) -> list[np.ndarray]:
    """``STREAM`` poses of the part, the lamp changed by ``change`` from image ``start``."""
    return [
        brighter(posed_part(seed=i), change) if i >= start else posed_part(seed=i)
        for i in range(STREAM)
    ]


@pytest.fixture(scope="module")
def calibration() -> dict[str, list[float]]:
    """The statistics of ``CALIBRATION`` other poses, as ``profile calibrate`` keeps them."""
    rows = [image_statistics(posed_part(seed=10_000 + i)) for i in range(CALIBRATION)]
    return statistics_table(rows)


def _first_findings(images: list[np.ndarray], table: dict[str, list[float]]) -> tuple[int, list]:
    """Feed the stream through the daemon's monitor at the shipped settings, with scores
    from the calibration's own distribution; the index and findings of the first window
    that fired (-1 and [] when none did)."""
    rng = np.random.default_rng(7)
    good = rng.normal(10.0, 1.0, CALIBRATION).tolist()
    monitor = DriftMonitor(DriftConfig())
    for i, image in enumerate(images):
        found = monitor.observe("cam", "bolt", float(rng.normal(10.0, 1.0)), False, good,
                                0.01, 1e9, statistics=image_statistics(image),
                                good_image_stats=table)  # fmt: skip
        if found:
            return i, found
    return -1, []


def test_a_steady_line_raises_no_image_drift(calibration) -> None:
    assert _first_findings(_stream(0.0, STREAM), calibration) == (-1, [])


@pytest.mark.parametrize(("change", "way"), [(0.2, "brighter"), (-0.2, "darker")])
def test_a_lamp_change_raises_image_drift_on_the_first_window_it_fills(
    calibration, change, way
) -> None:
    """Changed from image 100 (a window's first): the window ending at image 199 fires,
    every image test with it, the reason naming the direction and roughly the size (the
    8-bit truncation and the part's shading keep the median's ratio within a point of
    20 %)."""
    window = DriftConfig().window
    at, found = _first_findings(_stream(change, window), calibration)
    assert at == 2 * window - 1
    images = [f for f in found if f.kind == "image"]
    assert {f.measure for f in images} == set(NAMES)
    assert all(f.p_value < f.level == DriftConfig().level(5) for f in found)
    median = next(f for f in images if f.measure == "luminance_p50")
    size = re.match(rf"images (\d+)% {way} than at calibration \(median luminance", median.reason)
    assert size is not None, median.reason
    assert 19 <= int(size.group(1)) <= 21


def test_a_change_in_mid_window_is_seen_within_two_windows(calibration) -> None:
    """Changed at image 150: the window ending at 199 holds 50 changed images, the next
    one only changed ones; the alert comes by the end of that one at the latest."""
    at, found = _first_findings(_stream(0.2, 150), calibration)
    assert 150 <= at <= 299 and found[0].kind == "image"


def test_the_window_share_is_split_among_the_tests_the_calibration_allows(calibration) -> None:
    config = DriftConfig()
    good = list(np.linspace(0.0, 1.0, 50))
    assert WindowTests(config, good, 0.01, 0.9, calibration).tests == 5
    assert WindowTests(config, good, 0.01, 0.9, calibration).level == config.per_window / 5
    assert WindowTests(config, good, 0.01, 0.9, None).level == config.per_window / 2
    assert WindowTests(config, None, 0.01, None, None).level == config.per_window


def test_a_window_without_its_images_statistics_runs_no_image_test(calibration) -> None:
    """Results that came without statistics (none computed) leave the image tests out of
    that window instead of testing a part of it."""
    monitor = DriftMonitor(DriftConfig(window=10))
    dark = image_statistics(np.zeros((8, 8, 3), np.uint8))
    found = []
    for i in range(10):
        found += monitor.observe("cam", "bolt", 1.0, False, None, 0.01, None,
                                 statistics=None if i == 3 else dark,
                                 good_image_stats=calibration)  # fmt: skip
    assert found == []
    for _ in range(10):  # the next window, complete, is as dark as it gets
        found += monitor.observe("cam", "bolt", 1.0, False, None, 0.01, None,
                                 statistics=dark, good_image_stats=calibration)  # fmt: skip
    assert {f.kind for f in found} == {"image"}


def test_statistics_a_later_version_adds_are_left_out(calibration) -> None:
    table = {**calibration, "sharpness_p50": [1.0] * CALIBRATION}
    assert list(known_statistics(table)) == list(NAMES)
    assert known_statistics(None) == {}
