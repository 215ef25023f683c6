"""How the ``compare`` method's per-cell scores become detections, written once for the
torch detector (``detector``) and the torch-free line (``line``), each bringing only how
it prepares the images and compares them (``detect_cells``): each query's cell map
read at its cells' size by the readout every score shares (``detect.readout.read_cells``)
and carried at that size: what shows a map resizes it once (``map_geometry.frame_map``).
No torch is imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from padformer_edge.detect.array_ops import Array
from padformer_edge.detect.detection import Detection, call_timings
from padformer_edge.detect.readout import JobReadouts, read_cells


def cell_detections(
    readouts: JobReadouts,
    cell_scores: Array,
    sizes: Sequence[tuple[int, int]],
    input_size: int,
    shares: tuple[float, float],
) -> list[Detection]:
    """One ``Detection`` per query from its ``[h, w]`` cell scores (``cell_scores[i]``,
    ``[B, h, w]`` of either kind) and its ``(height, width)`` in ``sizes``;
    ``input_size`` is the comparator's side (the readouts' pixel scale), ``shares`` each
    query's share of the call's preparing and comparing time."""
    detections = []
    for index, size in enumerate(sizes):
        started = time.perf_counter()
        scored = read_cells(readouts, [cell_scores[index]], size, input_size)
        timings = call_timings(*shares, time.perf_counter() - started)
        detections.append(Detection(scored.score, scored.anomaly_map, [], [], timings))
    return detections


def detect_cells(
    readouts: JobReadouts,
    images: Sequence[np.ndarray],
    prepare: Callable[[Sequence[np.ndarray]], Any],
    compare: Callable[[Any], Array],
    input_size: int,
    synchronize: Callable[[], None] = lambda: None,
) -> list[Detection]:
    """One ``Detection`` per image (RGB ``uint8``, already checked): the steps both
    detectors take, timed alike. ``prepare`` makes the images' inputs, ``compare`` their
    ``[B, h, w]`` cell scores (the torch comparator, or the line's graphs) and
    ``synchronize`` waits for a device, so each share is the work's own."""
    started = time.perf_counter()
    prepared = prepare(images)
    synchronize()
    ready = time.perf_counter()
    cells = compare(prepared)
    synchronize()
    compared = time.perf_counter()
    shares = ((ready - started) / len(images), (compared - ready) / len(images))
    sizes = [(int(image.shape[0]), int(image.shape[1])) for image in images]
    return cell_detections(readouts, cells, sizes, input_size, shares)
