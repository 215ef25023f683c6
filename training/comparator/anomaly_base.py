"""What every image-space anomaly shares: the record, the part's silhouette, gradient
noise, and the rule that the mask is exactly the pixels that changed.

The generators (``anomalies`` for the blobs, ``thin_anomalies`` and ``small_bodies`` for
the strokes and specks) each decide where and how a good view changes; this module says
what counts as a change, so that every kind labels a pixel a defect by the same test the
renderer's masks use (``CHANGE_TOLERANCE``) and an invisible change is never a label.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

BACKGROUND_TOLERANCE = 12  # 8-bit levels from the background colour: not the part
CHANGE_TOLERANCE = 4  # 8-bit levels; as the renderer's masks (synth.dataset)
POINT_TRIES = 32  # uniform draws over the view before listing the part's pixels
MIN_SMALL_PIXELS = 5  # changed pixels a stroke or speck needs: a 1-px line 5 px long, a
# 3-px cross; no 5 pixels fit in a 2 x 2 square, so a kept speck spans at least 3 px


@dataclass(frozen=True)
class Anomaly:
    image: np.ndarray  # H x W x 3 uint8
    mask: np.ndarray  # H x W bool: the pixels that changed
    kind: str


def _fade(t: np.ndarray) -> np.ndarray:
    return t * t * t * (t * (t * 6 - 15) + 10)


def perlin(shape: tuple[int, int], cells: int, rng: np.random.Generator) -> np.ndarray:
    """Gradient noise in about [-1, 1] over ``shape``, with ``cells`` lattice cells along
    the longer side: smooth random blobs whose size is the image over ``cells``."""
    height, width = shape
    step = max(height, width) / cells
    gy, gx = int(np.ceil(height / step)) + 1, int(np.ceil(width / step)) + 1
    angles = rng.uniform(0, 2 * np.pi, size=(gy, gx))
    gradients = np.stack([np.cos(angles), np.sin(angles)], -1)
    y, x = np.mgrid[0:height, 0:width] / step
    y0, x0 = np.floor(y).astype(int), np.floor(x).astype(int)
    fy, fx = y - y0, x - x0

    def corner(dy: int, dx: int) -> np.ndarray:
        g = gradients[y0 + dy, x0 + dx]
        return g[..., 0] * (fx - dx) + g[..., 1] * (fy - dy)

    u, v = _fade(fx), _fade(fy)
    top = corner(0, 0) * (1 - u) + corner(0, 1) * u
    bottom = corner(1, 0) * (1 - u) + corner(1, 1) * u
    return (top * (1 - v) + bottom * v) * np.sqrt(2)


def silhouette(image: np.ndarray, background: Sequence[int] = (255, 255, 255)) -> np.ndarray:
    """Pixels of the part: those farther than ``BACKGROUND_TOLERANCE`` from the background
    in some channel (OpenCV's saturating arithmetic: a 448-px view in a fraction of a ms)."""
    colour = (*(float(c) for c in background), 0.0)  # OpenCV's 4-channel scalar
    red, green, blue = cv2.split(cv2.absdiff(np.ascontiguousarray(image), colour))
    return cv2.max(cv2.max(red, green), blue) > BACKGROUND_TOLERANCE


def changed(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The pixels whose colour moved by more than ``CHANGE_TOLERANCE`` in any channel."""
    return np.abs(after.astype(np.int16) - before).max(-1) > CHANGE_TOLERANCE


def random_point(part: np.ndarray, rng: np.random.Generator) -> tuple[float, float] | None:
    """A pixel of ``part`` as (x, y), drawn uniformly; None for an empty part. A batch of
    pixels of the whole image is tried first (a part fills a good share of its view), so
    the part's pixels are listed only for a part too small to be hit that way."""
    height, width = part.shape
    tries = rng.integers(0, (height, width), size=(POINT_TRIES, 2))
    inside = np.flatnonzero(part[tries[:, 0], tries[:, 1]])
    if len(inside):
        y, x = tries[inside[0]]
        return float(x), float(y)
    ys, xs = np.nonzero(part)
    if len(ys) == 0:
        return None
    pick = int(rng.integers(len(ys)))
    return float(xs[pick]), float(ys[pick])


def part_span(part: np.ndarray) -> float:
    """The side of a square as large as the part: the length scale strokes are drawn at."""
    return float(np.sqrt(part.sum()))


def paint(
    image: np.ndarray,
    part: np.ndarray,
    alpha: np.ndarray,
    target: np.ndarray,
    corner: tuple[int, int],
    kind: str,
) -> Anomaly | None:
    """``image`` with ``target`` blended in by ``alpha`` (both covering the box whose top-left
    pixel is ``corner`` = (top, left)) inside the part only, and its exact mask; None when
    fewer than ``MIN_SMALL_PIXELS`` pixels changed. Only the box is computed, so a stroke on
    a 448-px view costs what its few hundred pixels cost."""
    top, left = corner
    height, width = alpha.shape
    box = (slice(top, top + height), slice(left, left + width))
    weight = (alpha * part[box])[..., None].astype(np.float32)
    window = image[box].astype(np.float32)
    patch = np.clip(np.rint(window + weight * (target - window)), 0, 255).astype(np.uint8)
    local = changed(image[box], patch)
    if int(local.sum()) < MIN_SMALL_PIXELS:
        return None
    result = image.copy()
    result[box] = patch
    mask = np.zeros(image.shape[:2], bool)
    mask[box] = local
    return Anomaly(result, mask, kind)
