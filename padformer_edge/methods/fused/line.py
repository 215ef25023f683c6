"""The ``fused`` mix in numpy, for a line with no torch (``metric.mix_errors`` in torch):
the exporter records each job's mix, and this module only adds the terms up."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

F32 = np.float32


@dataclass(frozen=True)
class LineMix:
    """``scoring.Mix``: one fused job's LAB weight and nearest-reference term."""

    lab_weight: float
    reference_weight: float
    zoom: int
    turns: bool


def mix_errors(
    colour: np.ndarray,
    feature: np.ndarray,
    scales: tuple[float, float],
    mixes: Sequence[LineMix],
    references: Sequence[np.ndarray | None],
    reconstruction_weight: float,
) -> np.ndarray:
    """``[P, jobs, H, W]``: each job's mix of the ``[P, H, W]`` colour and feature errors
    (each divided by its spread on good views) and its ``[H, W]`` reference distance."""
    mixed = []
    for mix, reference in zip(mixes, references, strict=True):
        lab_part = F32(mix.lab_weight / scales[0] * reconstruction_weight)
        feature_part = F32((1.0 - mix.lab_weight) / scales[1] * reconstruction_weight)
        errors = colour * lab_part + feature * feature_part
        if mix.reference_weight > 0:
            assert reference is not None
            errors = errors + F32(mix.reference_weight) * reference
        mixed.append(errors)
    return np.stack(mixed, axis=1)
