"""The nearest-reference distance in numpy, for a line with no torch (``distance_search`` in
torch): each query cell's best cosine to the references' cells, one cache-sized block at a
time (``distance_blocks``, shared with torch), and the ``distance`` metric's map and score, read on
its cells."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from padformer_edge.detect.array_ops import flat_cells
from padformer_edge.detect.numpy_ops import F32
from padformer_edge.detect.readout import Readout, ScoredQuery, read_levels
from padformer_edge.methods.padformer.distance_blocks import SEARCH_BLOCKS, blocked_best_cosines
from padformer_edge.methods.padformer.distance_maps import (
    level_distances,
    mix_distances,
    upsampled_distances,
)
from padformer_edge.methods.padformer.mix import Mix


def best_cosines(cells: np.ndarray, bank: np.ndarray, upright: int) -> tuple:
    """``distance_search.best_cosines`` in numpy: each ``[Q, C]`` cell's best cosine to the bank's
    upright rows and (for a turned bank) to all its rows, by the one blocked search both
    kinds share (``distance_blocks.blocked_best_cosines``)."""
    return blocked_best_cosines(cells, bank, upright, SEARCH_BLOCKS)


def reference_cosines(
    query_cells: list[np.ndarray], banks: list[tuple[np.ndarray, int]]
) -> dict[tuple[int, bool], np.ndarray]:
    """``[h, w]`` best cosines per (magnification, turned references), from the query's
    unit cells per magnification (``[1, C, h, w]``) and the reference banks."""
    best: dict[tuple[int, bool], np.ndarray] = {}
    for level, (cells, (bank, upright)) in enumerate(zip(query_cells, banks, strict=True), 1):
        height, width = cells.shape[-2:]
        found = best_cosines(flat_cells(cells), bank, upright)
        for turned, cosines in zip((False, True), found, strict=True):
            if cosines is not None:
                best[level, turned] = cosines.reshape(height, width)
    return best


def reference_maps(
    mixes: Sequence[Mix],
    query_cells: list[np.ndarray],
    banks: list[tuple[np.ndarray, int]],
    size: tuple[int, int],
) -> list[np.ndarray | None]:
    """Each mix's ``[H, W]`` reference distance (``FusedMetric.reference_maps``: what the
    ``fused`` mix adds to every pass), from the query's cells and the reference banks."""
    if not any(mix.reference_weight > 0 for mix in mixes):
        return [None] * len(mixes)
    return mix_distances(mixes, upsampled_distances(reference_cosines(query_cells, banks), size))


def reference_levels(
    mixes: Sequence[Mix], query_cells: list[np.ndarray], banks: list[tuple[np.ndarray, int]]
) -> list[list[np.ndarray] | None]:
    """Each mix's reference distance as one map per magnification, on its cells
    (``FusedMetric.batch_reference_levels``: what the ``distance`` metric reads)."""
    if not any(mix.reference_weight > 0 for mix in mixes):
        return [None] * len(mixes)
    return level_distances(mixes, reference_cosines(query_cells, banks))


class DistanceSpec(Protocol):
    """What the ``distance`` metric's line score reads of a profile's scoring record."""

    mixes: tuple[Mix, ...]
    map_readout: Readout
    score_readout: Readout
    img_size: int


def score_distance(
    spec: DistanceSpec, levels: list[list[np.ndarray] | None], size: tuple[int, int]
) -> ScoredQuery:
    """The ``distance`` metric's map and score for a query of ``size``: each job's
    weighted distance per magnification (``reference_levels``), read on its cells by the
    readout torch shares (``readout.read_levels``), with no variance to filter by."""
    weighted = zip(spec.mixes, levels, strict=True)
    jobs = [[F32(mix.reference_weight) * level for level in job] for mix, job in weighted]  # type: ignore[union-attr]
    scored = read_levels(spec, jobs, (int(size[0]), int(size[1])), spec.img_size)
    scored.anomaly_map = scored.anomaly_map.astype(F32, copy=False)
    return scored
