"""Scratches drawn in camera pixels: thin straight lines on the part after it is framed.

A 3D crack is drawn on the render and then scaled with the part, so its width in frame
pixels follows the part's scale. A line camera's thinnest defect is a width in *camera*
pixels, so this family is drawn on the frame itself, after the part is pasted and before
the sensor's light, noise and encoder: one to three parallel straight strokes of one
width (drawn from ``--thin-px``), all inside the part's visible silhouette.

Each stroke is a hard band: a pixel belongs to it when its centre lies within half the
width of the stroke's centre segment, so the band's area over its length is the width
(to within a pixel per row or column it crosses) and no anti-aliased fringe blurs what
the mask means. The colour moves by ``levels`` in every channel, brighter on a dark
surface (bare metal under paint) and darker on a light one (a shadowed groove), so the
change clips at 0 or 255 as rarely as possible. The mask is exactly the pixels whose
colour moved by more than ``COLOUR_TOLERANCE``, the renderer's rule for every mask, and
``contrast`` is the mean change over it, in 8-bit levels before the sensor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from padformer_edge_training.families import SCRATCHES

SCRATCH_KIND = SCRATCHES  # the test folder of these scratches in a framed render (transfer)
COLOUR_TOLERANCE = 4  # 8-bit levels, as synth.dataset's masks
MIN_LENGTH_PX = 6  # shorter than this a stroke is a speck, not a line
TRIES = 40  # draws of a position before the view is given up
GAP_PX = (3.0, 6.0)  # clear pixels between two strokes of one scratch


@dataclass(frozen=True)
class Scratch:
    """One drawn scratch: the frame with it, its mask and what ``frames.json`` records."""

    frame: np.ndarray
    mask: np.ndarray
    record: dict[str, Any]


def band(shape: tuple[int, int], start: np.ndarray, end: np.ndarray, width: int) -> np.ndarray:
    """Pixels whose centre lies within ``width / 2`` of the segment ``start``-``end`` (x, y)."""
    height, frame_width = shape
    reach = width / 2
    left = max(0, math.floor(min(start[0], end[0]) - reach))
    right = min(frame_width, math.ceil(max(start[0], end[0]) + reach) + 1)
    top = max(0, math.floor(min(start[1], end[1]) - reach))
    bottom = min(height, math.ceil(max(start[1], end[1]) + reach) + 1)
    inside = np.zeros(shape, dtype=bool)
    if right <= left or bottom <= top:
        return inside
    ys, xs = np.mgrid[top:bottom, left:right].astype(np.float64)
    direction = end - start
    span = float(direction @ direction)
    t = ((xs - start[0]) * direction[0] + (ys - start[1]) * direction[1]) / max(span, 1e-12)
    t = np.clip(t, 0.0, 1.0)
    distance = np.hypot(xs - (start[0] + t * direction[0]), ys - (start[1] + t * direction[1]))
    inside[top:bottom, left:right] = distance <= reach
    return inside


def _fits(room: np.ndarray, start: np.ndarray, end: np.ndarray) -> bool:
    """Every half-pixel step of the centre segment lies on ``room``."""
    steps = max(2, math.ceil(2 * float(np.hypot(*(end - start)))) + 1)
    points = np.rint(np.linspace(start, end, steps)).astype(int)
    height, width = room.shape
    if (points < 0).any() or (points[:, 0] >= width).any() or (points[:, 1] >= height).any():
        return False
    return bool(room[points[:, 1], points[:, 0]].all())


def draw_scratch(
    frame: np.ndarray,
    part: np.ndarray,
    widths: tuple[int, int],
    contrast: tuple[float, float],
    rng: np.random.Generator,
) -> Scratch | None:
    """A scratch on ``frame`` (H x W x 3 uint8, before the sensor) inside ``part`` (H x W
    bool, the part's visible pixels); None when no stroke of the drawn width fits there.

    The strokes are kept a full width plus a pixel inside the silhouette, so the band
    never meets the belt and its width is never cut by the part's outline."""
    width = int(rng.integers(widths[0], widths[1] + 1))
    levels = float(rng.uniform(contrast[0], contrast[1]))
    strokes = int(rng.integers(1, 4))
    margin = math.ceil(width / 2) + 1
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * margin + 1, 2 * margin + 1))
    room = cv2.erode(part.astype(np.uint8), kernel, borderValue=0).astype(bool)
    ys, xs = np.nonzero(room)
    if len(xs) == 0:
        return None
    span = math.sqrt(float(part.sum()))  # the side of a square of the part's area
    for attempt in range(TRIES):
        pick = int(rng.integers(0, len(xs)))
        origin = np.array([xs[pick], ys[pick]], dtype=np.float64)
        heading = float(rng.uniform(0.0, math.pi))
        along = np.array([math.cos(heading), math.sin(heading)])
        across = np.array([-along[1], along[0]])
        shrink = 0.5 ** (attempt // 10)  # shorter strokes after every ten misses
        segments, offset = [], 0.0
        for _ in range(strokes):
            length = max(MIN_LENGTH_PX, span * rng.uniform(0.1, 0.35) * shrink)
            centre = origin + offset * across
            segments.append((centre - along * length / 2, centre + along * length / 2))
            offset += width + float(rng.uniform(*GAP_PX))
        if all(_fits(room, start, end) for start, end in segments):
            scratch = _paint(frame, segments, width, levels)
            if scratch.record["defect_px"] >= MIN_LENGTH_PX:  # not clipped away at 0 or 255
                return scratch
    return None


def _paint(
    frame: np.ndarray,
    segments: list[tuple[np.ndarray, np.ndarray]],
    width: int,
    levels: float,
) -> Scratch:
    shape = frame.shape[:2]
    covered = np.zeros(shape, dtype=bool)
    for start, end in segments:
        covered |= band(shape, start, end, width)
    under = frame[covered].astype(np.float32)
    sign = 1.0 if float(under.mean()) < 128 else -1.0
    painted = frame.copy()
    painted[covered] = np.clip(np.rint(under + sign * levels), 0, 255).astype(np.uint8)
    change = np.abs(painted.astype(np.int16) - frame).max(axis=2)
    mask = change > COLOUR_TOLERANCE
    record = {
        "defect_px": int(mask.sum()),
        "contrast": round(float(change[mask].mean()), 2) if mask.any() else 0.0,
        "width_px": width,
        "levels": round(sign * levels, 2),
        "length_px": round(sum(float(np.hypot(*(e - s))) for s, e in segments), 2),
        "strokes": len(segments),
    }
    return Scratch(painted, mask, record)
