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

PARITY_RTOL = 1e-3  # of the CPU map's maximum, per pixel and for the image score


def parity_gap(cpu: Sequence[Detection], other: Sequence[Detection]) -> float:
    """The largest difference of any map pixel or image score of ``other`` from the
    CPU's, in units of each CPU map's maximum: within parity when at most
    ``PARITY_RTOL``."""
    gaps = []
    for base, found in zip(cpu, other, strict=True):
        scale = max(float(np.abs(base.anomaly_map).max()), float(np.finfo(np.float32).tiny))
        gaps.append(float(np.abs(found.anomaly_map - base.anomaly_map).max()) / scale)
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
