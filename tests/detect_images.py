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


def posed_part(height: int = 96, width: int = 128, seed: int = 0) -> np.ndarray:
    """A shaded part (an ellipse with a bore) at a random place, angle and size on a
    textured grey table, with sensor noise: every seed another pose of one part under
    one lamp, for the drift watch's image statistics."""
    import cv2

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    image = 95 + 25 * yy / height + rng.normal(0.0, 3.0, (height, width))
    part = np.zeros((height, width), np.uint8)
    centre = (int(rng.uniform(0.35, 0.65) * width), int(rng.uniform(0.35, 0.65) * height))
    axes = (int(rng.uniform(0.22, 0.3) * width), int(rng.uniform(0.15, 0.22) * height))
    cv2.ellipse(part, centre, axes, rng.uniform(0, 180), 0, 360, 255, -1)
    cv2.circle(part, centre, axes[1] // 3, 0, -1)
    lit = rng.uniform(0.0, 2 * np.pi)  # which side of the part faces the lamp
    shading = 170 + 40 * np.cos(np.arctan2(yy - centre[1], xx - centre[0]) - lit)
    image = np.where(part > 0, shading, image)
    grey = np.clip(image, 0, 255)
    tint = np.array([1.0, 0.97, 0.92])  # a warm lamp
    return np.clip(grey[:, :, None] * tint, 0, 255).round().astype(np.uint8)


def brighter(image: np.ndarray, change: float) -> np.ndarray:
    """Every pixel times ``1 + change``, clipped: a brighter (or dimmer) lamp."""
    return np.clip(image.astype(np.float32) * (1.0 + change), 0, 255).astype(np.uint8)
