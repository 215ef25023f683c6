"""Image-space anomalies made on the fly on good training views, with exact masks.

The comparator must learn which differences between a query and its references matter
across objects it never saw, so it needs many defects on many objects; rendering 3D
defects is slow, and these cost a few milliseconds. Two families of kinds, each named:

- the blob kinds (``BLOB_KINDS``, here): a thresholded Perlin-noise field inside the
  part's silhouette, opened with a disc so that no strand thinner than ``MIN_WIDTH``
  survives; inside the blob the pixels change in one of four ways: another surface's
  texture blended in, a colour shift, a blur, or a contrast change;
- the small kinds (``SMALL_KINDS``): thin curves, polylines, branching cracks and
  scratches 1-3 px wide (``thin_anomalies``), and pasted bodies 3-15 px across and fine
  noise specks (``small_bodies``), which cover a small share of each of the comparator's
  cells they touch, as a hairline crack or a speck of grit does.

Every kind changes pixels inside the part only, and its mask is exactly the pixels that
changed by more than the renderer's colour tolerance (``anomaly_base.changed``), so an
invisible change is never labelled a defect. A recipe picks the kinds it trains on
(``episodes.synthetic_kinds``); the default is the four blob kinds, drawn exactly as before
the small kinds existed, so a recipe that names none trains on the same anomalies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import numpy as np

from padformer_edge_training.comparator.anomaly_base import (
    Anomaly,
    changed,
    perlin,
    silhouette,
)
from padformer_edge_training.comparator.anomaly_kinds import (
    ALL_KINDS,
    BLOB_KINDS,
    DEFAULT_KINDS,
    unknown_kinds,
)
from padformer_edge_training.comparator.small_bodies import pasted, speckle
from padformer_edge_training.comparator.thin_anomalies import crack, curve, polyline, scratch

SmallKind = Callable[
    [np.ndarray, np.ndarray, Sequence[np.ndarray], np.random.Generator], Anomaly | None
]
SMALL_KINDS: dict[str, SmallKind] = {
    "curve": curve,
    "polyline": polyline,
    "crack": crack,
    "scratch": scratch,
    "pasted": pasted,
    "speckle": speckle,
}
MIN_WIDTH = 5  # pixels: the opening disc; blobs keep no strand thinner than this
MIN_AREA = 0.002  # share of the image
MAX_AREA = 0.12
MAX_DRAWS = 12


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


def _replacement(image: np.ndarray, kind: str, donors: Sequence[np.ndarray], rng) -> np.ndarray:
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


def blob_anomaly(
    image: np.ndarray,
    donors: Sequence[np.ndarray],
    rng: np.random.Generator,
    kinds: Sequence[str] = BLOB_KINDS,
) -> Anomaly | None:
    """``image`` with one blob changed in one of ``kinds`` (blob kinds only), or None when
    the part leaves no room for a blob or the change is invisible. The blob is drawn before
    the kind, the order every seeded draw of the blob kinds has always had."""
    part = silhouette(image)
    blob = blob_mask(part, rng)
    if blob is None:
        return None
    kind = str(kinds[int(rng.integers(len(kinds)))])
    if kind == "texture" and not donors:
        kind = "colour"
    replaced = _replacement(image, kind, donors, rng)
    opacity = rng.uniform(0.6, 1.0)
    soft = cv2.GaussianBlur(blob.astype(np.float32), (0, 0), 1.0) * blob * opacity
    mixed = image * (1 - soft[..., None]) + replaced.astype(np.float32) * soft[..., None]
    result = np.clip(np.rint(mixed), 0, 255).astype(np.uint8)
    mask = changed(image, result)
    if mask.mean() < MIN_AREA / 2:
        return None
    return Anomaly(result, mask, kind)


def make_anomaly(
    image: np.ndarray,
    donors: Sequence[np.ndarray],
    rng: np.random.Generator,
    kinds: Sequence[str] = DEFAULT_KINDS,
) -> Anomaly | None:
    """``image`` (a good view, RGB uint8, white background) with one anomaly of one of
    ``kinds`` (a name repeated is drawn more often), or None when the part leaves no room
    for it or the change is too small to see. ``donors`` are good views of other objects,
    whose surfaces the ``texture`` and ``pasted`` kinds borrow.

    With blob kinds only, the draws are those of ``blob_anomaly`` (so the default and
    every recipe written before the small kinds draw what they always drew); otherwise
    the kind is drawn first, then its anomaly."""
    unknown = unknown_kinds(kinds)
    if unknown:
        raise ValueError(f"unknown anomaly kind {unknown[0]!r}; the kinds are {ALL_KINDS}")
    if all(k in BLOB_KINDS for k in kinds):
        return blob_anomaly(image, donors, rng, kinds)
    kind = str(kinds[int(rng.integers(len(kinds)))])
    if kind in BLOB_KINDS:
        return blob_anomaly(image, donors, rng, (kind,))
    return SMALL_KINDS[kind](image, silhouette(image), donors, rng)
