"""Thin image-space anomalies, 1-3 px wide: curves, polylines, branching cracks, scratches.

The blob kinds (``anomalies``) are many cells wide, so a comparator trained on them alone
never sees a defect that is a small share of one cell, and a crack one or two pixels wide
is exactly that. Each kind here draws centrelines (points in x, y), widens each by its
distance to the centreline into a band of 1, 2 or 3 px (full weight up to half the width,
fading over the next half pixel), and moves the colour under the band:

- ``curve``: a smooth spline through a few random points, a small darkening, lightening or
  colour change (10-40 levels): a faint line, as a seam or a hairline;
- ``polyline``: the same change along straight segments with sharp turns;
- ``crack``: a random walk that branches (at 45-80 degrees, twice deep at most), the
  trunk 1-3 px and each branch a pixel thinner, darkened to 25-70% of its brightness;
- ``scratch``: one to three short, nearly parallel straight lines 1-2 px wide, brighter
  or darker by 25-80 levels, as on machined or painted surfaces.

Stroke lengths are a share of the part's size (``part_span``), so a 448-px view gets a
longer line than a 192-px one but the same width in pixels. A draw whose band grows wider
than ``MAX_STROKE_WIDTH`` where it crosses itself is rejected like an invisible one, so
every kept mask is thin: no pixel lies more than ``MAX_STROKE_WIDTH`` pixels from an
unchanged one.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from padformer_edge_training.comparator.anomaly_base import (
    Anomaly,
    paint,
    part_span,
    random_point,
)

MAX_STROKE_WIDTH = 3  # pixels
Stroke = tuple[np.ndarray, int]  # a centreline ([n, 2] x, y) and its width in pixels


def _walk(
    start: np.ndarray, heading: float, steps: int, step: float, turn: float, rng
) -> np.ndarray:
    """``steps`` points after ``start``, each ``step`` px on, the heading turning by a
    normal draw of ``turn`` radians per step."""
    points = [start]
    for _ in range(steps):
        heading += rng.normal(0.0, turn)
        points.append(points[-1] + step * np.array([np.cos(heading), np.sin(heading)]))
    return np.stack(points)


def _catmull_rom(controls: np.ndarray, per_segment: int = 12) -> np.ndarray:
    """A smooth curve through every control point (the ends repeated as tangents)."""
    padded = np.vstack([controls[:1], controls, controls[-1:]])
    t = np.linspace(0, 1, per_segment, endpoint=False)[:, None]
    pieces = []
    for i in range(1, len(padded) - 2):
        p0, p1, p2, p3 = padded[i - 1], padded[i], padded[i + 1], padded[i + 2]
        pieces.append(
            0.5
            * (
                2 * p1
                + (p2 - p0) * t
                + (2 * p0 - 5 * p1 + 4 * p2 - p3) * t**2
                + (3 * p1 - p0 - 3 * p2 + p3) * t**3
            )
        )
    return np.vstack([*pieces, controls[-1:]])


def band_alpha(
    strokes: list[Stroke], shape: tuple[int, int]
) -> tuple[np.ndarray, tuple[int, int]] | None:
    """Each stroke's band of weights in the box around all of them, and the box's top-left
    pixel; None when every stroke lies outside the image."""
    everything = np.vstack([points for points, _ in strokes])
    margin = MAX_STROKE_WIDTH + 2
    left = max(0, int(np.floor(everything[:, 0].min())) - margin)
    top = max(0, int(np.floor(everything[:, 1].min())) - margin)
    right = min(shape[1], int(np.ceil(everything[:, 0].max())) + margin + 1)
    bottom = min(shape[0], int(np.ceil(everything[:, 1].max())) + margin + 1)
    if right <= left or bottom <= top:
        return None
    alpha = np.zeros((bottom - top, right - left), np.float32)
    for width in sorted({w for _, w in strokes}):
        line = np.full(alpha.shape, 255, np.uint8)
        for points, w in strokes:
            if w == width:
                local = np.rint((points - (left, top)) * 16).astype(np.int32)
                cv2.polylines(line, [local], False, 0, 1, cv2.LINE_8, shift=4)
        if line.all():
            continue
        distance = cv2.distanceTransform(line, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        alpha = np.maximum(alpha, np.clip(width / 2 + 0.5 - distance, 0, 1))
    return alpha, (top, left)


def thin_enough(mask: np.ndarray) -> bool:
    """No pixel of ``mask`` lies farther than ``MAX_STROKE_WIDTH`` from an unchanged one."""
    padded = np.pad(mask.astype(np.uint8), 1)
    distance = cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
    return float(distance.max()) <= MAX_STROKE_WIDTH


def _shifted(window: np.ndarray, levels: float, rng) -> np.ndarray:
    """``window`` lighter or darker by ``levels`` in grey or along a random colour."""
    direction = np.ones(3) if rng.random() < 0.5 else rng.normal(size=3)
    direction = direction / np.abs(direction).max()
    return window + float(rng.choice([-1.0, 1.0])) * levels * direction.astype(np.float32)


def _draw(
    image: np.ndarray,
    part: np.ndarray,
    strokes: list[Stroke],
    recolour: Callable[[np.ndarray], np.ndarray],
    kind: str,
) -> Anomaly | None:
    placed = band_alpha(strokes, part.shape)
    if placed is None:
        return None
    alpha, (top, left) = placed
    window = image[top : top + alpha.shape[0], left : left + alpha.shape[1]].astype(np.float32)
    anomaly = paint(image, part, alpha, recolour(window), (top, left), kind)
    if anomaly is None or not thin_enough(
        anomaly.mask[top : top + alpha.shape[0], left : left + alpha.shape[1]]
    ):
        return None
    return anomaly


def _start(part: np.ndarray, rng) -> tuple[np.ndarray, float] | None:
    point = random_point(part, rng)
    if point is None:
        return None
    return np.array(point), part_span(part)


def curve(image: np.ndarray, part: np.ndarray, donors, rng) -> Anomaly | None:
    """A faint smooth line through 3-6 points, 1-3 px wide."""
    start = _start(part, rng)
    if start is None:
        return None
    origin, span = start
    count = int(rng.integers(3, 7))
    length = span * rng.uniform(0.1, 0.45)
    controls = _walk(origin, rng.uniform(0, 2 * np.pi), count - 1, length / (count - 1), 0.6, rng)
    width = int(rng.integers(1, MAX_STROKE_WIDTH + 1))
    levels = rng.uniform(10, 40)
    return _draw(
        image, part, [(_catmull_rom(controls), width)], lambda w: _shifted(w, levels, rng), "curve"
    )


def polyline(image: np.ndarray, part: np.ndarray, donors, rng) -> Anomaly | None:
    """A faint line of 2-5 straight segments turning sharply, 1-3 px wide."""
    start = _start(part, rng)
    if start is None:
        return None
    origin, span = start
    segments = int(rng.integers(2, 6))
    length = span * rng.uniform(0.1, 0.45)
    corners = _walk(origin, rng.uniform(0, 2 * np.pi), segments, length / segments, 1.0, rng)
    width = int(rng.integers(1, MAX_STROKE_WIDTH + 1))
    levels = rng.uniform(10, 40)
    return _draw(image, part, [(corners, width)], lambda w: _shifted(w, levels, rng), "polyline")


def _branches(
    start: np.ndarray, heading: float, length: float, width: int, depth: int, rng
) -> list[Stroke]:
    """A crack from ``start``: a wandering path that sprouts thinner side cracks."""
    step = 2.5
    steps = max(2, int(length / step))
    path = _walk(start, heading, steps, step, 0.25, rng)
    strokes: list[Stroke] = [(path, width)]
    if depth >= 2:
        return strokes
    for i in range(1, steps):
        if rng.random() < 0.08:
            ahead = path[i + 1] - path[i]
            side = float(rng.choice([-1.0, 1.0])) * rng.uniform(np.radians(45), np.radians(80))
            strokes += _branches(
                path[i],
                float(np.arctan2(ahead[1], ahead[0])) + side,
                length * rng.uniform(0.3, 0.6),
                max(1, width - 1),
                depth + 1,
                rng,
            )
    return strokes


def crack(image: np.ndarray, part: np.ndarray, donors, rng) -> Anomaly | None:
    """A dark branching crack, the trunk 1-3 px wide and each branch a pixel thinner."""
    start = _start(part, rng)
    if start is None:
        return None
    origin, span = start
    width = int(rng.integers(1, MAX_STROKE_WIDTH + 1))
    strokes = _branches(
        origin, rng.uniform(0, 2 * np.pi), span * rng.uniform(0.15, 0.5), width, 0, rng
    )
    factor = rng.uniform(0.25, 0.7)
    return _draw(image, part, strokes, lambda w: w * factor, "crack")


def scratch(image: np.ndarray, part: np.ndarray, donors, rng) -> Anomaly | None:
    """One to three short straight lines side by side, 1-2 px wide, brighter or darker."""
    start = _start(part, rng)
    if start is None:
        return None
    origin, span = start
    heading = rng.uniform(0, np.pi)
    across = np.array([-np.sin(heading), np.cos(heading)])
    strokes: list[Stroke] = []
    offset = 0.0
    for _ in range(int(rng.integers(1, 4))):
        angle = heading + rng.normal(0.0, 0.05)
        length = span * rng.uniform(0.05, 0.25)
        along = np.array([np.cos(angle), np.sin(angle)])
        centre = origin + offset * across + rng.uniform(-0.2, 0.2) * length * along
        ends = np.stack([centre - along * length / 2, centre + along * length / 2])
        strokes.append((ends, int(rng.integers(1, 3))))
        offset += rng.uniform(5, 10)
    levels = rng.uniform(25, 80) * float(rng.choice([-1.0, 1.0]))
    return _draw(image, part, strokes, lambda w: w + levels, "scratch")
