"""Tiny camera frames for the framed-profile tests: the synth's own travelling belt
(``synth --frame``'s ``Framer``, its seams and marks moved from frame to frame, light and
colour shifted, sensor noise) with a two-tone part of known box pasted at a chosen place,
frames of the belt alone, and the empty-belt photo a line would take once."""

from __future__ import annotations

import cv2
import numpy as np

from padformer_edge_training.synth.frames import Framer, FrameSpec, Placement

WIDTH, HEIGHT = 320, 256
SPEC = FrameSpec(WIDTH, HEIGHT, belt="belt", light=0.08, colour=5, noise=2)
PART = 96  # the part's render side in camera pixels


def framer() -> Framer:
    return Framer(SPEC, 11, (0, 0, 0))


def part(size: int = PART, to_left_edge: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """A part's RGB render and its cover: an orange body with a blue arm (the body
    reaching the render's left column when ``to_left_edge``, for a part the frame cuts)."""
    rgb = np.zeros((size, size, 3), np.uint8)
    cover = np.zeros((size, size), np.uint8)
    centre = (size // 3 if to_left_edge else size // 2, size // 2)
    axes = (size // 3 + (1 if to_left_edge else 0), size // 5)
    cv2.ellipse(cover, centre, axes, 0 if to_left_edge else 30, 0, 360, 1, -1)
    cv2.rectangle(cover, (size // 2, size // 2), (size - 4, size // 2 + 8), 1, -1)
    rgb[cover > 0] = (200, 150, 40)
    rgb[size // 2 : size // 2 + 9, size // 2 : size - 4] = (90, 160, 200)
    rgb[cover == 0] = 0
    return rgb, cover > 0


def framed(
    x: int, y: int, seed: int, to_left_edge: bool = False, dent: bool = False
) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """A frame with the part's render at (x, y) and the part's own box (x0, y0, x1, y1,
    exclusive) in frame pixels; ``dent``: a dark spot drawn on the part's body."""
    shot = framer()
    rng = np.random.default_rng(seed)
    lit = shot.place_empty(rng)
    placement = Placement(PART, x, y, lit.belt_offset, lit.gain, lit.shift)
    rgb, cover = part(PART, to_left_edge)
    if dent:
        cv2.circle(rgb, (PART // 2 - 8, PART // 2 - 4), 5, (40, 30, 20), -1)
    frame = shot.compose(placement, rng, rgb, cover)
    rows, cols = np.flatnonzero(cover.any(axis=1)), np.flatnonzero(cover.any(axis=0))
    return frame, (x + int(cols[0]), y + int(rows[0]), x + int(cols[-1]) + 1, y + int(rows[-1]) + 1)


def empty(seed: int) -> np.ndarray:
    """A frame of the belt alone, at its own offset and light."""
    shot = framer()
    rng = np.random.default_rng(seed)
    return shot.compose(shot.place_empty(rng), rng)


def belt_photo() -> np.ndarray:
    """The empty belt as the line photographs it once."""
    return framer().belt_photo()


REFERENCE_PLACES = ((30, 40), (150, 30), (90, 120), (200, 140))


def references() -> list[np.ndarray]:
    """Four good frames, the part at four places."""
    return [framed(x, y, 100 + i)[0] for i, (x, y) in enumerate(REFERENCE_PLACES)]
