"""Where a score's map lands in the frame: the one resize every map takes, in one place.

A detection carries its anomaly map on the grid it was read on (``Detection.anomaly_map``:
the comparator's cells, the frame shrunk for a wide blur, or the frame itself where the
blur runs at full size), not drawn at the frame's size. Whatever shows or measures a map
in the frame (the heatmap's overlay and raw map, masks and AUPRO in evaluation, stored
maps, parity checks) brings it there through ``frame_map``, once, to the size it needs.

A map covers a ``Box`` of the frame, ``(x0, y0, x1, y1)`` in frame pixels (default: the
whole frame): a score of a crop of the frame around the part (the camera frames' part
finder) pastes the crop's map into the frame with the crop's box, and the rest of the
frame is 0 (nothing scored there). The resize is bilinear with half-pixel centres and
edges held (``F.interpolate(..., mode="bilinear", align_corners=False)``, numpy's
``numpy_ops.bilinear_weights``), so a map read on a coarser grid and brought to the frame here
is the map the readout drew at the frame's size before (within float32 rounding), and
``frame_max`` is the largest value of that frame-sized map without drawing it.

No torch is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

Box = tuple[float, float, float, float]
"""``(x0, y0, x1, y1)``: the part of the frame a map covers, in frame pixels (x1, y1
exclusive: the whole frame of width W and height H is ``(0, 0, W, H)``)."""


def whole_frame(frame_size: tuple[int, int]) -> Box:
    """The box of the whole frame of ``(height, width)`` ``frame_size``."""
    return 0.0, 0.0, float(frame_size[1]), float(frame_size[0])


@dataclass(frozen=True)
class _Axis:
    """The bilinear taps of the output pixels of one axis that fall inside the box: the
    first output index ``start``, each one's two source indices and the upper one's weight."""

    start: int
    low: np.ndarray
    high: np.ndarray
    upper: np.ndarray

    def pick(self, chosen: np.ndarray) -> _Axis:
        return _Axis(0, self.low[chosen], self.high[chosen], self.upper[chosen])

    def extremes(self) -> np.ndarray:
        """Indices of the first and last output pixel of each run with the same two
        source taps: along such a run the value is linear in the weight, which only
        grows, so its largest value lies at one end of the run."""
        if self.low.size == 0:
            return np.arange(0)
        key = self.low * (int(self.high.max()) + 1) + self.high
        first = np.r_[True, key[1:] != key[:-1]]
        last = np.r_[key[1:] != key[:-1], True]
        return np.flatnonzero(first | last)


def _axis(source: int, out: int, scale: float, low_edge: float, high_edge: float) -> _Axis:
    """Taps for ``out`` output pixels (``scale`` output pixels per frame pixel) of a map of
    ``source`` pixels covering frame coordinates ``low_edge`` .. ``high_edge``."""
    low_out, high_out = low_edge * scale, high_edge * scale
    centres = np.arange(out) + 0.5
    inside = np.flatnonzero((centres >= low_out) & (centres < high_out))
    if inside.size == 0:
        empty = np.zeros(0, np.int64)
        return _Axis(0, empty, empty, np.zeros(0, np.float32))
    position = (centres[inside] - low_out) * (source / (high_out - low_out)) - 0.5
    position = np.maximum(position, 0.0)
    low = np.minimum(position.astype(np.int64), source - 1)
    high = np.minimum(low + 1, source - 1)
    upper = (position - low).astype(np.float32)
    return _Axis(int(inside[0]), low, high, upper)


def _taps(
    shape: tuple[int, int], frame_size: tuple[int, int], box: Box | None, size: tuple[int, int]
) -> tuple[_Axis, _Axis]:
    x0, y0, x1, y1 = whole_frame(frame_size) if box is None else box
    if not (0 <= x0 < x1 <= frame_size[1] and 0 <= y0 < y1 <= frame_size[0]):
        raise ValueError(f"map box {box} does not lie inside the frame {frame_size}.")
    rows = _axis(shape[0], size[0], size[0] / frame_size[0], y0, y1)
    cols = _axis(shape[1], size[1], size[1] / frame_size[1], x0, x1)
    return rows, cols


def _resample(plane: np.ndarray, rows: _Axis, cols: _Axis) -> np.ndarray:
    """The bilinear samples of ``plane`` at the taps of ``rows`` x ``cols`` (float32)."""
    lower = np.float32(1.0) - rows.upper[:, None]
    between = plane[rows.low] * lower + plane[rows.high] * rows.upper[:, None]
    left = np.float32(1.0) - cols.upper
    return between[:, cols.low] * left + between[:, cols.high] * cols.upper


def _resample_fast(
    plane: np.ndarray,
    rows: _Axis,
    cols: _Axis,
    frame_size: tuple[int, int],
    box: Box | None,
    size: tuple[int, int],
) -> np.ndarray:
    """``_resample`` by OpenCV's bilinear resize where the box's edges fall on whole
    output pixels (the whole frame, a crop pasted at the frame's size): then its taps are
    OpenCV's, which computes float32 maps with float weights and is an order of magnitude
    faster than the gathers (a 5 MP frame: 10 ms against 300 ms)."""
    x0, y0, x1, y1 = whole_frame(frame_size) if box is None else box
    edges = (y0 * size[0] / frame_size[0], y1 * size[0] / frame_size[0],
             x0 * size[1] / frame_size[1], x1 * size[1] / frame_size[1])  # fmt: skip
    if all(float(edge).is_integer() for edge in edges) and rows.low.size and cols.low.size:
        return cv2.resize(plane, (cols.low.size, rows.low.size), interpolation=cv2.INTER_LINEAR)
    return _resample(plane, rows, cols)


def frame_map(
    anomaly_map: np.ndarray,
    frame_size: tuple[int, int],
    box: Box | None = None,
    size: tuple[int, int] | None = None,
) -> np.ndarray:
    """``anomaly_map`` (an ``[h, w]`` map covering ``box`` of a frame of ``(height,
    width)`` ``frame_size``; default box: the whole frame) as a float32 ``[H, W]`` map of
    the whole frame drawn at ``size`` pixels (default: the frame's own), 0 outside the box.

    Resized once, bilinearly: the heatmap asks for its overlay's size straight from the
    cell-sized map rather than for the frame's and then shrinking."""
    plane = np.asarray(anomaly_map, dtype=np.float32)
    size = tuple(frame_size) if size is None else tuple(size)  # type: ignore[assignment]
    if box is None and plane.shape == size:
        return plane
    rows, cols = _taps(plane.shape, frame_size, box, size)  # type: ignore[arg-type]
    out = np.zeros(size, dtype=np.float32)
    samples = _resample_fast(plane, rows, cols, frame_size, box, size)  # type: ignore[arg-type]
    out[rows.start : rows.start + samples.shape[0], cols.start : cols.start + samples.shape[1]] = (
        samples
    )
    return out


def frame_max(
    anomaly_map: np.ndarray, frame_size: tuple[int, int], box: Box | None = None
) -> float:
    """The largest value of ``frame_map(anomaly_map, frame_size, box)`` inside the box,
    without drawing the frame-sized map: along each axis only the first and last pixel of
    each run between the same two source pixels can hold a run's largest value (a
    bilinear sample is linear in its weight along each axis), so only those rows and
    columns are sampled. This is a map's image score at the frame's size."""
    plane = np.asarray(anomaly_map, dtype=np.float32)
    if box is None and plane.shape == tuple(frame_size):
        return float(plane.max())
    rows, cols = _taps(plane.shape, frame_size, box, tuple(frame_size))  # type: ignore[arg-type]
    rows, cols = rows.pick(rows.extremes()), cols.pick(cols.extremes())
    # a sample is a mean of its four source pixels, so it is at most the largest value of
    # the two source rows (and of the two columns) it reads: once one sample is known,
    # only the rows and columns that could beat it are sampled
    row_top = np.maximum(plane.max(axis=1)[rows.low], plane.max(axis=1)[rows.high])
    col_top = np.maximum(plane.max(axis=0)[cols.low], plane.max(axis=0)[cols.high])
    top_row, top_col = rows.pick(np.argmax(row_top)[None]), cols.pick(np.argmax(col_top)[None])
    known = float(_resample(plane, top_row, top_col).max())
    kept_rows, kept_cols = np.flatnonzero(row_top >= known), np.flatnonzero(col_top >= known)
    return max(known, float(_resample(plane, rows.pick(kept_rows), cols.pick(kept_cols)).max()))
