"""Small image-space anomalies a few pixels across: pasted bodies and noise specks.

A five-pixel foreign body is a small share of one of the comparator's cells, and no blob
kind (``anomalies``) is that small. Two kinds here:

- ``pasted``: a body 3-15 px across, a random polygon filled with a patch cut from inside
  another object's part (a ``donor``) or, without a donor or one time in three, a
  two-colour noise texture; its edge is hard or antialiased, half the time each;
- ``speckle``: a soft disc 4-16 px across whose brightness or colour is shaken by noise
  with features of 1-3 px (amplitude 15-60 levels), as grit, pitting or a fine stain.

Both stay in their box by construction (the body's polygon and the speck's disc are drawn
on a canvas of their size), so the mask of a body spans at most 15 px and that of a speck
at most 16.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from padformer_edge_training.comparator.anomaly_base import (
    Anomaly,
    paint,
    perlin,
    random_point,
    silhouette,
)

BODY_SIZES = (3, 15)  # pixels across, inclusive
SPECK_SIZES = (4, 16)


def _box(centre: tuple[float, float], size: int, shape: tuple[int, int]) -> tuple[int, int]:
    """The top-left pixel of a ``size`` square around ``centre``, kept inside the image."""
    x, y = centre
    top = int(np.clip(round(y) - size // 2, 0, shape[0] - size))
    left = int(np.clip(round(x) - size // 2, 0, shape[1] - size))
    return top, left


def _polygon(size: int, rng: np.random.Generator) -> np.ndarray:
    """A random star-shaped polygon inside a ``size`` square, in 1/16 px fixed point."""
    count = int(rng.integers(5, 10))
    angles = np.sort(rng.uniform(0, 2 * np.pi, count))
    radius = (size - 1) / 2 * rng.uniform(0.6, 1.0, count)
    centre = (size - 1) / 2
    points = np.stack([centre + radius * np.cos(angles), centre + radius * np.sin(angles)], -1)
    return np.rint(points * 16).astype(np.int32)


def _donor_patch(donor: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray | None:
    """A ``size`` square cut around a pixel of ``donor``'s part, turned a random quarter."""
    if donor.shape[0] < size or donor.shape[1] < size:
        return None
    point = random_point(silhouette(donor), rng)
    if point is None:
        return None
    top, left = _box(point, size, donor.shape[:2])
    patch = donor[top : top + size, left : left + size]
    return np.rot90(patch, int(rng.integers(4))).astype(np.float32)


def _noise_texture(size: int, rng: np.random.Generator) -> np.ndarray:
    """Two random colours mixed by noise with features of a few pixels."""
    field = perlin((size, size), max(2, size // 3), rng)
    share = np.clip(field * 0.5 + 0.5, 0, 1)[..., None]
    first, second = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    return (first * share + second * (1 - share)).astype(np.float32)


def pasted(
    image: np.ndarray, part: np.ndarray, donors: Sequence[np.ndarray], rng
) -> Anomaly | None:
    """A small body of another surface, 3-15 px across, with a hard or soft edge."""
    centre = random_point(part, rng)
    if centre is None:
        return None
    size = int(rng.integers(BODY_SIZES[0], BODY_SIZES[1] + 1))
    size = min(size, *image.shape[:2])
    canvas = np.zeros((size, size), np.uint8)
    soft = rng.random() < 0.5
    cv2.fillPoly(canvas, [_polygon(size, rng)], 255, cv2.LINE_AA if soft else cv2.LINE_8, 4)
    content = None
    if donors and rng.random() < 2 / 3:
        content = _donor_patch(donors[int(rng.integers(len(donors)))], size, rng)
    if content is None:
        content = _noise_texture(size, rng)
    corner = _box(centre, size, image.shape[:2])
    return paint(image, part, canvas.astype(np.float32) / 255, content, corner, "pasted")


def speckle(image: np.ndarray, part: np.ndarray, donors, rng) -> Anomaly | None:
    """A soft disc 4-16 px across whose colour is shaken by fine noise."""
    centre = random_point(part, rng)
    if centre is None:
        return None
    diameter = int(rng.integers(SPECK_SIZES[0], SPECK_SIZES[1] + 1))
    size = min(diameter, *image.shape[:2])
    grid = np.arange(size) - (size - 1) / 2
    distance = np.hypot(grid[:, None], grid[None, :])
    disc = np.clip(size / 2 - distance, 0, 1).astype(np.float32)
    feature = rng.uniform(1.0, 3.0)
    noise = perlin((size, size), max(2, round(size / feature)), rng)
    direction = np.ones(3) if rng.random() < 0.5 else rng.normal(size=3)
    direction = direction / np.abs(direction).max()
    shake = rng.uniform(15, 60) * noise[..., None] * direction
    corner = _box(centre, size, image.shape[:2])
    top, left = corner
    window = image[top : top + size, left : left + size].astype(np.float32)
    return paint(image, part, disc, (window + shake).astype(np.float32), corner, "speckle")
