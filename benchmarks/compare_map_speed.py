"""CPU time per image of the default ``compare`` score's map, drawn at the frame's size
against carried at its cells' size (issue 62, item 3), in one run on the same cells.

For each frame size the comparator scores one query once (``CompareDetector``); its
per-cell scores are then read two ways, each followed by the overlay the daemon draws,
and each is also timed with the comparator's call for the image (the whole image's work):

- ``frame``: the map brought to the frame's size inside the readout (as main did before
  this change: the cells read on the blur's grid, upsampled to the frame, the score its
  maximum there), then the overlay shrunk from the frame-sized map;
- ``cells``: the map carried on the blur's grid (``readout.read_cells``), the score from
  ``map_geometry.frame_max``, the overlay resized once from it (``map_geometry.frame_map``).

Both give the same score within ``PARITY_RTOL`` (checked before timing). Times are the
median process CPU seconds of ``--repeats`` calls on one thread (``common.timed``).

    python benchmarks/detect_speed.py --compare-map --sizes 224x224,1024x1280,2048x2448
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch

from benchmarks.common import markdown_table, smooth_photo, timed
from padformer_edge.detect.heatmap import render_overlay
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.parity import PARITY_RTOL
from padformer_edge.detect.readout import read_cells, smooth_cells
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.compare.detector import CompareDetector


def sizes_of(text: str) -> list[tuple[int, int]]:
    """``224x224,1024x1280`` -> [(224, 224), (1024, 1280)] (height x width)."""
    return [tuple(int(side) for side in item.split("x")) for item in text.split(",")]  # type: ignore[misc]


def framed_read(detector: CompareDetector, cells: torch.Tensor, size: tuple[int, int]):
    """The map and score as the readout made them before: read on the blur's grid, then
    drawn at the frame's size inside the readout, the score its maximum there."""
    metric = detector.metric
    scale = max(size) / metric.input_size
    read = smooth_cells(cells, size, metric.map_readout.sigma * scale)
    amap = frame_map(read.float().numpy(), size)
    return amap, float(amap.max())


def carried_read(detector: CompareDetector, cells: torch.Tensor, size: tuple[int, int]):
    """The map carried on the grid it was read on, the score at the frame's size."""
    scored = read_cells(detector.metric, [cells], size, detector.metric.input_size)
    return scored.anomaly_map, scored.score


def time_variant(
    read: Callable,
    detector: CompareDetector,
    cells: torch.Tensor,
    query: np.ndarray,
    repeats: int,
) -> tuple[float, float, float]:
    """CPU s of one variant's readout; of the readout and the overlay; and of the whole
    image's work (the comparator's cells, the readout and the overlay: ``detect`` and
    the daemon's heatmap drawing, with the readout of this variant)."""
    size = query.shape[:2]

    def overlay(cells: torch.Tensor = cells) -> object:
        amap, score = read(detector, cells, size)
        return render_overlay(query, amap, score, threshold=score * 0.9)

    def whole() -> object:
        with torch.inference_mode():
            unit = to_unit_tensor(query, detector.device)[None]
            return overlay(detector.metric.batch_cells([unit])[0])

    read_s, _ = timed(lambda: read(detector, cells, size), repeats)
    both_s, _ = timed(overlay, repeats)
    whole_s, _ = timed(whole, repeats)
    return read_s, both_s, whole_s


def photo(seed: int, size: tuple[int, int]) -> np.ndarray:
    return np.ascontiguousarray(smooth_photo(max(size), seed)[: size[0], : size[1]])


def compare_map_rows(sizes: list[tuple[int, int]], references: int, repeats: int) -> list[list]:
    """One row per frame size and variant: CPU ms of the readout, of the readout and the
    overlay, and the map's size as carried."""
    torch.set_num_threads(1)
    settings = DetectionSettings(device="cpu", metric="compare")
    rows = []
    for size in sizes:
        query = photo(100, size)
        detector = CompareDetector([photo(seed, size) for seed in range(references)], settings)
        with torch.inference_mode():
            cells = detector.metric.batch_cells([to_unit_tensor(query, detector.device)[None]])[0]
        found = {}
        for name, read in (("frame", framed_read), ("cells", carried_read)):
            found[name] = read(detector, cells, size)
            read_s, both_s, whole_s = time_variant(read, detector, cells, query, repeats)
            shape = "x".join(map(str, found[name][0].shape))
            rows.append([f"{size[0]}x{size[1]}", name, shape, read_s * 1e3, both_s * 1e3,
                         whole_s * 1e3])  # fmt: skip
        (before, old), (after, new) = found["frame"], found["cells"]
        top = float(np.abs(before).max())
        gap = float(np.abs(frame_map(after, size) - before).max())
        assert gap <= PARITY_RTOL * top and abs(new - old) <= PARITY_RTOL * top, (gap, new, old)
    return rows


def print_compare_map(sizes: list[tuple[int, int]], references: int, repeats: int) -> None:
    headers = ["frame", "map", "carried map", "readout CPU ms", "readout + overlay CPU ms",
               "cells + readout + overlay CPU ms"]  # fmt: skip
    print(markdown_table(headers, compare_map_rows(sizes, references, repeats)))
