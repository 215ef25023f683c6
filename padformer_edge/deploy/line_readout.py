"""The numpy readout every torch-free scorer shares (``detect.readout`` in torch): the
consistency filter, the Gaussian smoothing, and a query's map and score, so PADFormer's
metrics and the comparator read their maps the same way on a line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from padformer_edge.deploy import arrays
from padformer_edge.detect.scoring_config import SMOOTH_MAX_SIGMA

F32 = np.float32


@dataclass(frozen=True)
class LineReadout:
    """``scoring.Readout``: the consistency filter or the plain mean, then a Gaussian."""

    consistency_filter: bool
    sigma: float

    def apply(self, mean: np.ndarray, variance: np.ndarray, scale: float) -> np.ndarray:
        amap = consistency_filter(mean, variance) if self.consistency_filter else mean
        return smooth(amap, self.sigma * scale)


def consistency_filter(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """``scoring.consistency_filter``: keep the mean where the variance is strictly above
    its lower median."""
    flat = variance.reshape(-1)
    kth = (flat.size + 1) // 2 - 1
    median = np.partition(flat, kth)[kth]
    return np.where(variance > median, mean, F32(0.0)).astype(F32)


def smooth(amap: np.ndarray, sigma: float) -> np.ndarray:
    """``scoring.smooth``: a Gaussian of ``sigma`` pixels, on a shrunk frame when wide."""
    if sigma <= 0:
        return amap
    factor = max(1, int(sigma // SMOOTH_MAX_SIGMA))
    small = arrays.average_pool(amap, factor) if factor > 1 else amap
    sigma_small = sigma / factor
    radius = min(int(4 * sigma_small + 0.5), min(small.shape) - 1)
    if radius < 1:
        return amap
    blurred = arrays.gaussian_blur(small, 2 * radius + 1, sigma_small)
    return arrays.upsample(blurred, amap.shape)


def flat_cells(cells: np.ndarray) -> np.ndarray:
    """``[B, C, h, w]`` -> ``[B * h * w, C]`` (``scoring.flat_cells``)."""
    return cells.transpose(0, 2, 3, 1).reshape(-1, cells.shape[1])


@dataclass
class LineScore:
    """``scoring.ScoredQuery`` in numpy."""

    anomaly_map: np.ndarray
    score: float
    pass_mean: list[float]
    pass_max: list[float]
