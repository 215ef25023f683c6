"""Image-space anomalies made on the fly on good training views, with exact masks.

The comparator must learn which differences between a query and its references matter
across objects it never saw, so it needs many defects on many objects; rendering 3D
defects is slow, and these cost a few milliseconds. Every anomaly is a blob: a thresholded
Perlin-noise field inside the part's silhouette, opened with a disc so that no strand
thinner than the disc survives. Inside the blob the pixels change in one of four ways:
another surface's texture blended in, a colour shift, a blur, or a contrast change.

Nothing here is shaped like a held-out defect family (``families``): no separate
object is pasted (the pasted texture is cut from inside another part's silhouette and
fills a blob), and no thin line is drawn (the opening removes anything thinner than
``MIN_WIDTH`` pixels). The mask is the blob's pixels that actually changed by more than
the renderer's colour tolerance, so an invisible change is never labelled a defect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

KINDS = ("texture", "colour", "blur", "contrast")
MIN_WIDTH = 5  # pixels: the opening disc; blobs keep no strand thinner than this
MIN_AREA = 0.002  # share of the image
MAX_AREA = 0.12
BACKGROUND_TOLERANCE = 12  # 8-bit levels from the background colour: not the part
CHANGE_TOLERANCE = 4  # 8-bit levels; as the renderer's masks (synth.dataset)
MAX_DRAWS = 12


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
    """Pixels of the part: those farther than ``BACKGROUND_TOLERANCE`` from the background."""
    distance = np.abs(image.astype(np.int16) - np.asarray(background, np.int16)).max(-1)
    return distance > BACKGROUND_TOLERANCE


def _disc(width: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (width, width))


def blob_mask(part: np.ndarray, rng: np.random.Generator) -> np.ndarray | None:
    """A Perlin blob inside ``part`` covering ``MIN_AREA``..``MAX_AREA`` of the image, with
    nothing thinner than ``MIN_WIDTH``; None when no draw fits (a part too small)."""
    disc = _disc(MIN_WIDTH)
    inner = cv2.erode(part.astype(np.uint8), disc).astype(bool)
    for _ in range(MAX_DRAWS):
        field = perlin(part.shape, int(rng.integers(2, 9)), rng)
        blob = (field > rng.uniform(0.15, 0.55)) & inner
        blob = cv2.morphologyEx(blob.astype(np.uint8), cv2.MORPH_OPEN, disc).astype(bool)
        share = blob.mean()
        if MIN_AREA <= share <= MAX_AREA:
            return blob
        if share > MAX_AREA:  # keep one connected piece of a blob that is too large
            count, labels = cv2.connectedComponents(blob.astype(np.uint8))
            pieces = [labels == i for i in range(1, count)]
            fitting = [p for p in pieces if MIN_AREA <= p.mean() <= MAX_AREA]
            if fitting:
                return fitting[int(rng.integers(len(fitting)))]
    return None


def _texture_from(
    donor: np.ndarray, shape: tuple[int, int], rng: np.random.Generator
) -> np.ndarray:
    """A surface texture cut from inside ``donor``'s part, turned and tiled to ``shape``."""
    part = silhouette(donor)
    ys, xs = np.nonzero(cv2.erode(part.astype(np.uint8), _disc(9)))
    if len(ys) == 0:
        ys, xs = np.nonzero(np.ones(donor.shape[:2], bool))
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    patch = donor[y0:y1, x0:x1]
    patch = np.rot90(patch, int(rng.integers(4))).copy()
    reps = (-(-shape[0] // patch.shape[0]), -(-shape[1] // patch.shape[1]), 1)
    tiled = np.tile(patch, reps)[: shape[0], : shape[1]]
    return np.ascontiguousarray(tiled)


def _colour_shift(image: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    hsv = cv2.cvtColor(image, cv2.COLOR_RGB2HSV).astype(np.float32)
    hsv[..., 0] = (hsv[..., 0] + rng.uniform(15, 75) * rng.choice([-1, 1])) % 180
    hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(0.5, 1.8) + rng.uniform(10, 60), 0, 255)
    hsv[..., 2] = np.clip(hsv[..., 2] * rng.uniform(0.6, 1.3), 0, 255)
    return cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB)


def _changed(image: np.ndarray, kind: str, donors: Sequence[np.ndarray], rng) -> np.ndarray:
    if kind == "texture":
        donor = donors[int(rng.integers(len(donors)))]
        return _texture_from(donor, image.shape[:2], rng)
    if kind == "colour":
        return _colour_shift(image, rng)
    if kind == "blur":
        sigma = rng.uniform(2.0, 5.0)
        return cv2.GaussianBlur(image, (0, 0), sigma)
    mean = image.reshape(-1, 3).mean(0)
    factor = rng.choice([rng.uniform(0.3, 0.6), rng.uniform(1.6, 2.5)])
    return np.clip((image - mean) * factor + mean + rng.uniform(-40, 40), 0, 255).astype(np.uint8)


def make_anomaly(
    image: np.ndarray,
    donors: Sequence[np.ndarray],
    rng: np.random.Generator,
    kinds: Sequence[str] = KINDS,
) -> Anomaly | None:
    """``image`` (a good view, RGB uint8, white background) with one blob changed, or None
    when the part leaves no room for a blob or the change is invisible. ``donors`` are good
    views of other objects, whose surfaces the ``texture`` kind borrows."""
    part = silhouette(image)
    blob = blob_mask(part, rng)
    if blob is None:
        return None
    kind = str(kinds[int(rng.integers(len(kinds)))])
    if kind == "texture" and not donors:
        kind = "colour"
    changed = _changed(image, kind, donors, rng)
    opacity = rng.uniform(0.6, 1.0)
    soft = cv2.GaussianBlur(blob.astype(np.float32), (0, 0), 1.0) * blob * opacity
    mixed = image * (1 - soft[..., None]) + changed.astype(np.float32) * soft[..., None]
    result = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    mask = np.abs(result.astype(np.int16) - image).max(-1) > CHANGE_TOLERANCE
    if mask.mean() < MIN_AREA / 2:
        return None
    return Anomaly(result, mask, kind)
