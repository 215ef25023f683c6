"""Synthetic product photos for detection tests: a smooth part with a printed pattern."""

from __future__ import annotations

import numpy as np


def product_image(height: int = 96, width: int = 128, seed: int = 0) -> np.ndarray:
    """An RGB uint8 picture with gradients and a few discs: texture, but no sharp noise."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    image = np.stack(
        [90 + 60 * xx / width, 110 + 50 * yy / height, 140 - 40 * (xx + yy) / (width + height)],
        axis=2,
    )
    for _ in range(4):
        cy, cx = rng.uniform(0.2, 0.8) * height, rng.uniform(0.2, 0.8) * width
        radius = rng.uniform(0.08, 0.15) * min(height, width)
        inside = (yy - cy) ** 2 + (xx - cx) ** 2 < radius**2
        image[inside] = rng.uniform(40, 200, size=3)
    return image.round().astype(np.uint8)


def with_defect(image: np.ndarray, box: tuple[int, int, int, int]) -> np.ndarray:
    """``image`` with a saturated magenta square pasted at ``box`` = (top, left, h, w)."""
    top, left, h, w = box
    defective = image.copy()
    defective[top : top + h, left : left + w] = (230, 20, 220)
    return defective
