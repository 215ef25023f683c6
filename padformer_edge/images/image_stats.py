"""Cheap statistics of a decoded image that a change of lighting or camera moves whatever
the part's pose: the image half of the drift watch (``daemon.drift``).

The model's scores can be indifferent to a lighting change (on the rendered duck a 20 %
brighter lamp moved the shipped model's scores by 0.04 standard deviations,
``docs/benchmarks.md#drift-rendered``), yet a line must hear about a new lamp or a
swapped camera before it decides that the model still sees what it was calibrated on.
So each good calibration image also records three numbers, the 10th, 50th and 90th
percentiles of its luminance, and the daemon compares a window's values with them.

Why these three:

* A lamp that ages or is replaced, an exposure or gain setting, another camera: each
  scales or offsets the pixel values, and every percentile of the frame moves with them
  (a 20 % brighter lamp moves them by 20 %, as far as nothing clips).
* The part's pose changes only the share of the frame it covers and which of its sides
  faces the camera, so over the calibration images each percentile spreads over a band
  that the test learns; and a defect covers too few pixels to move a percentile, so the
  watch answers "did the line change?", not "are these parts bad?" (the mean would move
  with a large stain).
* Three points see a scaling (all move by one factor), a change of contrast (the 10th
  and 90th move apart) and a change of the dark or the light part alone. On a clipped
  white background the 50th and 90th stay at 255 under a brighter lamp while the 10th
  (the part) moves; a part covering less than a tenth of such a frame is not seen
  brightening, only darkening (a limit ``docs/daemon.md#drift`` states).
* Luminance (OpenCV's grey conversion, Rec. 601 weights) rather than each channel: three
  tests instead of nine keep each test's share of the false-alert level larger. A colour
  cast that leaves luminance unchanged is not seen.

Each 8-bit level is read as spread evenly over ``[v - 0.5, v + 0.5]`` and the percentile
interpolated within it, so the values are nearly continuous (few ties, which would make
the Kolmogorov-Smirnov test conservative) and a small change moves them at all. Frames
above ``MAX_PIXELS`` are subsampled on a regular grid first: a 5-megapixel frame costs
what a 512 x 512 one does, about a millisecond beside the model's tens to hundreds. Only NumPy and
OpenCV, no torch: a ``.[line]`` install's daemon computes them too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

MAX_PIXELS = 1 << 18
"""Pixels read per image at most (a regular grid of a larger frame)."""
LEVELS = 256


@dataclass(frozen=True)
class ImageStatistic:
    """One recorded statistic: its quantile and how a drift alert names it."""

    name: str
    quantile: float
    label: str
    where: str
    """Where in the image it looks, for the reason ("" for the median: the image as a whole)."""


STATISTICS: tuple[ImageStatistic, ...] = (
    ImageStatistic("luminance_p10", 0.10, "10th-percentile luminance", " at their dark end"),
    ImageStatistic("luminance_p50", 0.50, "median luminance", ""),
    ImageStatistic("luminance_p90", 0.90, "90th-percentile luminance", " at their bright end"),
)
NAMES: tuple[str, ...] = tuple(s.name for s in STATISTICS)
BY_NAME: dict[str, ImageStatistic] = {s.name: s for s in STATISTICS}
DECIMALS = 3
"""Values are stored rounded to this many decimals (a thousandth of a grey level)."""


def luminance(image: np.ndarray) -> np.ndarray:
    """8-bit luminance of an RGB (or already grey) ``uint8`` image, read on a regular
    grid of at most ``MAX_PIXELS`` pixels (OpenCV's nearest-pixel resize picks the grid:
    a strided NumPy copy of a 5-megapixel frame took five times as long)."""
    import cv2  # the daemon and calibration have decoded with it already

    height, width = image.shape[:2]
    step = math.ceil(math.sqrt(height * width / MAX_PIXELS))
    if step > 1:
        size = (math.ceil(width / step), math.ceil(height / step))
        image = cv2.resize(image, size, interpolation=cv2.INTER_NEAREST)
    if image.ndim == 2:
        return image
    if image.shape[2] == 1:
        return image[:, :, 0]
    return cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)


def histogram(grey: np.ndarray) -> np.ndarray:
    """Pixels per 8-bit level (OpenCV's, four times NumPy's ``bincount`` speed here)."""
    import cv2

    return cv2.calcHist([grey], [0], None, [LEVELS], [0, LEVELS]).ravel().astype(np.int64)


def percentiles(histogram: np.ndarray, quantiles: Sequence[float]) -> list[float]:
    """Quantiles of a histogram of integer levels, each level spread evenly over
    ``[level - 0.5, level + 0.5]`` (linear within the level)."""
    cumulative = np.cumsum(histogram, dtype=np.float64)
    total = cumulative[-1]
    out = []
    for q in quantiles:
        target = q * total
        level = min(int(np.searchsorted(cumulative, target)), histogram.size - 1)
        below = cumulative[level - 1] if level > 0 else 0.0
        inside = float(histogram[level])
        fraction = (target - below) / inside if inside > 0 else 0.5
        out.append(level - 0.5 + fraction)
    return out


def image_statistics(image: np.ndarray) -> tuple[float, ...]:
    """The ``STATISTICS`` of one decoded image, in their order."""
    found = percentiles(histogram(luminance(image)), [s.quantile for s in STATISTICS])
    return tuple(round(float(value), DECIMALS) for value in found)


def statistics_table(rows: Sequence[Sequence[float]]) -> dict[str, list[float]]:
    """Per-image rows (``image_statistics``) as one list per statistic, as
    ``profile.yaml`` keeps them (``calibration.good_image_stats``)."""
    columns = np.asarray(rows, dtype=np.float64).reshape(len(rows), len(NAMES))
    return {name: columns[:, i].round(DECIMALS).tolist() for i, name in enumerate(NAMES)}


def known_statistics(table: Mapping[str, Sequence[float]] | None) -> dict[str, np.ndarray]:
    """The statistics of a stored table this version computes (by name, in ``STATISTICS``
    order), each as an array; a name it does not know (written by a later version) is
    left out, since the daemon could not compute it for new images."""
    if not table:
        return {}
    return {name: np.asarray(table[name], dtype=np.float64) for name in NAMES if table.get(name)}
