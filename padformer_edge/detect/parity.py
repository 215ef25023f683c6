"""How closely a detection on CUDA must agree with the same detection on the CPU.

The bound is relative to the CPU map's largest value, so it means the same for the
``fused`` metric's scaled units and the distance's cosine units. Its size: the batched
search's own rounding is at most 2 * C * eps of a cosine (C = 40 channels, about 1e-5),
but cuDNN runs the frozen CNN's convolutions in TF32 by default (10-bit mantissa, unit
roundoff 2^-11, about 5e-4 per product) and the comparator's attention may sum in any
order; 1e-3 leaves room for that rounding and is still far below any threshold margin a
calibration leaves. It is checked on a lent GPU by ``benchmarks/gpu_detect_speed.py``
(docs/model.md#the-gpu-search); a precision that breaks it is not used for detection.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from padformer_edge.detect.detection import Detection
from padformer_edge.detect.map_geometry import frame_map

PARITY_RTOL = 1e-3  # of the CPU map's maximum, per pixel and for the image score


def on_one_grid(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two maps of one query on one grid: the finer one's (a map is never finer than its
    frame, so a map stored at the frame's size, as maps were before they were carried at
    their cells' size, is compared with a cell-sized one in the frame), each brought
    there by ``map_geometry.frame_map``."""
    if first.shape == second.shape:
        return first, second
    size = (max(first.shape[0], second.shape[0]), max(first.shape[1], second.shape[1]))
    return frame_map(first, size), frame_map(second, size)


def parity_gap(cpu: Sequence[Detection], other: Sequence[Detection]) -> float:
    """The largest difference of any map pixel or image score of ``other`` from the
    CPU's, in units of each CPU map's maximum: within parity when at most
    ``PARITY_RTOL``."""
    gaps = []
    for base, found in zip(cpu, other, strict=True):
        base_map, found_map = on_one_grid(base.anomaly_map, found.anomaly_map)
        scale = max(float(np.abs(base_map).max()), float(np.finfo(np.float32).tiny))
        gaps.append(float(np.abs(found_map - base_map).max()) / scale)
        gaps.append(abs(found.score - base.score) / scale)
    return max(gaps, default=0.0)


def verdicts_agree(cpu: Sequence[Detection], other: Sequence[Detection], threshold: float) -> bool:
    """Whether every verdict (score above ``threshold``) is the CPU's, except for CPU
    scores within the parity bound of the threshold, where either verdict is allowed."""
    for base, found in zip(cpu, other, strict=True):
        margin = PARITY_RTOL * max(float(np.abs(base.anomaly_map).max()), abs(threshold))
        if abs(base.score - threshold) > margin and (base.score > threshold) != (
            found.score > threshold
        ):
            return False
    return True
