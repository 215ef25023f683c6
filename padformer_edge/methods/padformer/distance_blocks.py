"""Each query cell's best cosine to a bank of reference cells, one cache-sized block of
the similarity matrix at a time, written once for torch tensors (``distance_search``, the torch
metrics on a CPU) and numpy arrays (``distance_line``, the torch-free line).

With C = 40 channels a product is cheap, and writing a whole similarity matrix to memory
and reading it back for its maximum was most of the cost (at 2x zoom with a dozen turned
references, about a gigabyte per query); a block is reduced while it is still in the
cache. A block is a few bank rows against many query cells (``Blocks``), written into one
reused buffer and reduced down its columns, which both kinds do with whole vectors at a
time. Each cosine is the same C-term dot product whatever the blocks, and a maximum does
not depend on the order it is taken in. No torch is imported here.
"""

from __future__ import annotations

from dataclasses import dataclass

from padformer_edge.detect.array_ops import Array, ops_of


@dataclass(frozen=True)
class Blocks:
    """The shape of one block of the similarity matrix: ``bank_rows`` reference cells
    against ``query_rows`` query cells."""

    query_rows: int
    bank_rows: int


SEARCH_BLOCKS = Blocks(query_rows=4096, bank_rows=128)
"""512K cosines, 2 MiB, within a core's L2: the layout measured fastest for numpy on the
edge preset with 12 references (2304 query cells against 110,592 bank rows, one thread);
torch on a CPU runs it no slower than the 512 x 2048 blocks it had before (the commit that
made both kinds share this search gives the figures)."""


def blocked_best_cosines(
    cells: Array, bank: Array, upright: int, blocks: Blocks
) -> tuple[Array, Array | None]:
    """``[Q]`` best cosine of each of the ``[Q, C]`` unit cells to the ``[R, C]`` bank's
    first ``upright`` rows and (for a turned bank, ``R > upright``) to all its rows,
    searched block by block (``blocks``)."""
    ops = ops_of(cells)
    best_upright = ops.zeros_like(cells[:, 0]) - float("inf")
    best_any = best_upright + 0.0 if bank.shape[0] > upright else None
    for start in range(0, cells.shape[0], blocks.query_rows):
        part = slice(start, start + blocks.query_rows)
        columns = ops.as_float32(cells[part].T)  # [C, q]
        buffer = ops.empty(columns, (blocks.bank_rows, int(columns.shape[1])))
        _fold_max(columns, bank[:upright], best_upright[part], buffer, blocks.bank_rows)
        if best_any is not None:
            best_any[part] = best_upright[part]
            _fold_max(columns, bank[upright:], best_any[part], buffer, blocks.bank_rows)
    return best_upright, best_any


def _fold_max(columns: Array, bank_rows: Array, best: Array, buffer: Array, step: int) -> None:
    """``best`` (a view) raised in place to each query column's largest cosine with
    ``bank_rows``, ``step`` rows at a time; ``buffer`` holds one block of products."""
    ops = ops_of(columns)
    for start in range(0, bank_rows.shape[0], step):
        rows = bank_rows[start : start + step]
        block = ops.matmul_into(rows, columns, buffer[: rows.shape[0]])
        ops.maximum_into(best, ops.amax(block, (0,)))
