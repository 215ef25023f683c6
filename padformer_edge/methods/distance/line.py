"""The nearest-reference distance in numpy, for a line with no torch (``search`` in
torch): each query cell's best cosine to the references' cells, one cache-sized block at a
time, and the ``distance`` metric's map and score."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from padformer_edge.detect.array_ops import flat_cells
from padformer_edge.detect.numpy_ops import F32
from padformer_edge.detect.readout import Readout, ScoredQuery, read_without_passes
from padformer_edge.methods.distance.maps import mix_distances, upsampled_distances
from padformer_edge.methods.fused.mix import Mix

# query cells x bank rows per similarity block (``best_cosines``): 512K cosines, 2 MiB,
# within a core's L2. Torch's detector uses 512 x 2048 (``search``); with numpy's layout
# here 4096 x 128 took a quarter less time than that on the edge preset with 12
# references (2304 query cells against 110,592 bank rows, one BLAS thread)
SIMILARITY_QUERY_ROWS = 4096
SIMILARITY_BANK_ROWS = 128


def best_cosines(cells: np.ndarray, bank: np.ndarray, upright: int) -> tuple:
    """``search.best_cosines`` in numpy: each ``[Q, C]`` cell's best cosine to the bank's upright
    rows and (for a turned bank) to all its rows, one cache-sized block of the similarity
    matrix at a time, reduced while it is still in the cache.

    The blocks are laid out for numpy rather than as torch's are: a few bank rows against
    many query cells (``SIMILARITY_BANK_ROWS`` x ``SIMILARITY_QUERY_ROWS``), each product
    written into one reused buffer and reduced down its columns, which numpy does with
    whole vectors at a time. The cosines, and so their maximum, are the same products."""
    best_upright = np.full(cells.shape[0], -np.inf, dtype=F32)
    best_any = best_upright.copy() if bank.shape[0] > upright else None
    for start in range(0, cells.shape[0], SIMILARITY_QUERY_ROWS):
        part = slice(start, start + SIMILARITY_QUERY_ROWS)
        columns = np.ascontiguousarray(cells[part].T, dtype=F32)  # [C, q]
        buffer = np.empty((SIMILARITY_BANK_ROWS, columns.shape[1]), dtype=F32)
        _fold_max(columns, bank[:upright], best_upright[part], buffer)
        if best_any is not None:
            best_any[part] = best_upright[part]
            _fold_max(columns, bank[upright:], best_any[part], buffer)
    return best_upright, best_any


def _fold_max(
    columns: np.ndarray, bank_rows: np.ndarray, best: np.ndarray, buffer: np.ndarray
) -> None:
    """``best`` (a view) raised in place to each query column's largest cosine with
    ``bank_rows``; ``buffer`` holds one block of products."""
    for start in range(0, bank_rows.shape[0], SIMILARITY_BANK_ROWS):
        rows = bank_rows[start : start + SIMILARITY_BANK_ROWS]
        block = buffer[: rows.shape[0]]
        np.matmul(rows, columns, out=block)
        np.maximum(best, block.max(axis=0), out=best)


def reference_maps(
    mixes: Sequence[Mix],
    query_cells: list[np.ndarray],
    banks: list[tuple[np.ndarray, int]],
    size: tuple[int, int],
) -> list[np.ndarray | None]:
    """Each mix's ``[H, W]`` reference distance (``FusedMetric.reference_maps``), from the
    query's unit cells per magnification (``[1, C, h, w]``) and the reference banks."""
    if not any(mix.reference_weight > 0 for mix in mixes):
        return [None] * len(mixes)
    best: dict[tuple[int, bool], np.ndarray] = {}
    for level, (cells, (bank, upright)) in enumerate(zip(query_cells, banks, strict=True), 1):
        height, width = cells.shape[-2:]
        found = best_cosines(flat_cells(cells), bank, upright)
        for turned, cosines in zip((False, True), found, strict=True):
            if cosines is not None:
                best[level, turned] = cosines.reshape(height, width)
    return mix_distances(mixes, upsampled_distances(best, size))


class DistanceSpec(Protocol):
    """What the ``distance`` metric's line score reads of a profile's scoring record."""

    mixes: tuple[Mix, ...]
    map_readout: Readout
    score_readout: Readout
    img_size: int


def score_distance(spec: DistanceSpec, references: list[np.ndarray | None]) -> ScoredQuery:
    """The ``distance`` metric's map and score: each job's weighted distance read by the
    readout torch shares (``readout.read_without_passes``), with no variance to filter by."""
    size = references[0].shape if references[0] is not None else (0, 0)
    weighted = zip(spec.mixes, references, strict=True)
    maps = [F32(mix.reference_weight) * distance for mix, distance in weighted]
    scored = read_without_passes(spec, maps, (int(size[0]), int(size[1])), spec.img_size)
    scored.anomaly_map = scored.anomaly_map.astype(F32, copy=False)
    return scored
