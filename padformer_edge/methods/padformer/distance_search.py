"""The nearest-reference distance: how far each cell of a query lies from any reference.

Per stride-8 cell, one minus the best cosine similarity of the query's frozen CNN feature
to any cell of any reference. It is there because a measurement showed the reconstruction
barely reads the references: the same query scores within a few per cent whichever good
references it gets, black ones included. Without this term, the references would hardly
affect the verdict. The distance can also be averaged over magnified inputs (a ``zoom``:
the CNN sees the images at 1x, 2x... the model's size): a stride-8 cell of a magnified
image covers less of the part, so small defects stand out more, while the 1x cells keep
the context that tells a large stain from a new view. References can also be matched
turned by quarter turns: a part seen from any side is seen at any roll.

The search for each cell's best cosine runs one of two ways (``SEARCHES``). ``blocked``
(the CPU's) reduces one cache-sized block at a time, one query at a time, by the search
the torch-free line runs too (``distance_blocks``). ``batched``
(CUDA's) takes every cell of every image of a detector call against the whole bank in as
few products and maxima as ``BATCHED_SEARCH_BYTES`` allows: a GPU has the memory, and
launching hundreds of small blocks per image left it waiting for Python. Each cosine is
the same C-term dot product either way; only its summation order may differ (the bound
is in docs/model.md#the-gpu-search).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from padformer_edge.detect.array_ops import QUARTER_TURNS, flat_cells, turned_bank
from padformer_edge.detect.images import resize_square
from padformer_edge.methods.padformer.distance_blocks import SEARCH_BLOCKS
from padformer_edge.methods.padformer.distance_blocks import (
    blocked_best_cosines as shared_blocked_search,
)
from padformer_edge.methods.padformer.distance_maps import Distances, upsampled_distances
from padformer_edge.model.backbone import unfold_from_patches, unit_cells
from padformer_edge.model.padformer import PADFormer

BATCHED_SEARCH_BYTES = 1 << 30  # similarity values one batched product may hold: 1 GiB
SEARCHES = ("auto", "blocked", "batched")


def resolve_search(search: str, device: torch.device) -> str:
    """``auto`` is ``batched`` on CUDA and ``blocked`` elsewhere; the others force one
    (tests compare them on the CPU)."""
    if search not in SEARCHES:
        raise ValueError(f"search {search!r} is unknown; choose one of {', '.join(SEARCHES)}")
    if search == "auto":
        return "batched" if device.type == "cuda" else "blocked"
    return search


def cell_features(model: PADFormer, target_features: torch.Tensor) -> torch.Tensor:
    """``[B, C, h, w]`` unit-length frozen CNN features of every stride-8 cell, from the
    ``[B, M, F]`` ``model.target_features`` of normalised images (the feature error's
    own target, so a query runs the CNN once for both)."""
    cfg = model.config
    cells = unfold_from_patches(target_features.float(), cfg.cells_per_side, cfg.grid_size)
    return F.normalize(cells, dim=1)


def level_cells(model: PADFormer, squares01: torch.Tensor, level: int) -> torch.Tensor:
    """``[B, C, h, w]`` unit cells of ``[B, 3, L, L]`` square images in [0, 1] already at
    ``level`` times the model's size. At 1x they come through ``model.target_features``,
    exactly as the feature error's target (and a query's 1x cells) do; at a higher level
    the frozen CNN reads the magnified image directly (it is fully convolutional)."""
    normalised = model.normalize(squares01)
    if level == 1:
        return cell_features(model, model.target_features(normalised))
    return unit_cells(model.encoder.patch_embed.cnn(normalised))


@dataclass(frozen=True)
class ReferenceBank:
    """Every cell of the references at one magnification, ``[R, C]``. The first
    ``upright`` rows are the references as taken; any further rows are the same
    references turned by a quarter, a half and three quarters, so one similarity product
    serves a mix that matches turned references and one that does not."""

    cells: torch.Tensor
    upright: int

    @property
    def turned(self) -> bool:
        return self.cells.shape[0] > self.upright


def reference_banks(
    model: PADFormer, references01: list[torch.Tensor], zoom: int, turns: bool = False
) -> list[ReferenceBank]:
    """One bank per magnification 1..``zoom`` of the references (``[3, H, W]`` each, in
    [0, 1], squeezed square like every input), with quarter turns when ``turns``."""
    banks = []
    for level in range(1, zoom + 1):
        size = model.config.img_size * level
        squares = torch.cat([resize_square(image.unsqueeze(0), size) for image in references01])
        cells, upright = turned_bank(
            lambda images, level=level: level_cells(model, images, level),
            squares,
            QUARTER_TURNS if turns else (),
        )
        banks.append(ReferenceBank(cells, upright))
    return banks


def best_cosines(
    cells: torch.Tensor, bank: ReferenceBank, search: str = "auto"
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``[Q]`` best cosine of each of the ``[Q, C]`` unit cells to the bank's upright rows,
    and (for a turned bank) to all its rows, searched the ``search`` way (``SEARCHES``)."""
    if resolve_search(search, cells.device) == "batched":
        return batched_best_cosines(cells, bank)
    return blocked_best_cosines(cells, bank)


def batched_best_cosines(
    cells: torch.Tensor, bank: ReferenceBank, budget_bytes: int = BATCHED_SEARCH_BYTES
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``best_cosines`` in as few products as ``budget_bytes`` of similarities allow: each
    product takes as many query rows against the whole bank as fit, and one maximum over
    the upright columns and one over the turned ones reduce it."""
    per_row = bank.cells.shape[0] * cells.element_size()
    rows_per_product = max(1, budget_bytes // per_row)
    uprights, everys = [], []
    for start in range(0, cells.shape[0], rows_per_product):
        similarity = cells[start : start + rows_per_product] @ bank.cells.T
        upright = similarity[:, : bank.upright].amax(dim=1)
        uprights.append(upright)
        if bank.turned:
            everys.append(torch.maximum(upright, similarity[:, bank.upright :].amax(dim=1)))
    return torch.cat(uprights), torch.cat(everys) if everys else None


def blocked_best_cosines(
    cells: torch.Tensor, bank: ReferenceBank
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``[Q]`` best cosine of each of the ``[Q, C]`` unit cells to the bank's upright rows,
    and (for a turned bank) to all its rows, one cache-sized block at a time, by the one
    blocked search tensors and the line's arrays share
    (``distance_blocks.blocked_best_cosines``)."""
    return shared_blocked_search(cells, bank.cells, bank.upright, SEARCH_BLOCKS)


def nearest_reference_distances(
    model: PADFormer,
    query01: torch.Tensor,
    query_target: torch.Tensor,
    banks: list[ReferenceBank],
    size: tuple[int, int],
    search: str = "auto",
) -> Distances:
    """For each magnification of ``banks`` (and, for turned banks, with the turns too): for
    each cell of the query (``query01``, ``[1, 3, H, W]`` in [0, 1]; ``query_target``, its
    ``[1, M, F]`` ``model.target_features``) one minus its best cosine similarity to any
    reference cell, upsampled to ``size``. Any cell, not the same place: the part is seen
    from another side in every reference."""
    return batch_reference_distances(model, [query01], query_target, banks, [size], search)[0]


def batch_reference_distances(
    model: PADFormer,
    queries01: list[torch.Tensor],
    query_targets: torch.Tensor,
    banks: list[ReferenceBank],
    sizes: list[tuple[int, int]],
    search: str = "auto",
) -> list[Distances]:
    """``nearest_reference_distances`` of each query (``[1, 3, H, W]`` each, in [0, 1];
    ``query_targets`` their ``[B, M, F]`` ``model.target_features``), query ``i``'s maps
    upsampled to ``sizes[i]`` (``batch_best_cosines``)."""
    bests = batch_best_cosines(model, queries01, query_targets, banks, search)
    return [upsampled_distances(best, size) for best, size in zip(bests, sizes, strict=True)]


def batch_best_cosines(
    model: PADFormer,
    queries01: list[torch.Tensor],
    query_targets: torch.Tensor,
    banks: list[ReferenceBank],
    search: str = "auto",
) -> list[dict[tuple[int, bool], torch.Tensor]]:
    """Each query's ``[h, w]`` best cosines per magnification of ``banks`` (and, for
    turned banks, with the turns too), on that magnification's cells.

    A ``batched`` search takes the cells of all queries in one search per bank; a
    ``blocked`` one searches query by query, so on a CPU each query keeps the bits it gets
    alone, whichever images share its call."""
    how = resolve_search(search, query_targets.device)
    bests: list[dict[tuple[int, bool], torch.Tensor]] = [{} for _ in queries01]
    groups = (
        [(queries01, query_targets)]
        if how == "batched"
        else [([query], query_targets[i : i + 1]) for i, query in enumerate(queries01)]
    )
    for level, bank in enumerate(banks, start=1):
        found = []
        for group, targets in groups:
            cells = query_cells(model, group, targets, level)
            found.append((cells.shape[-2:], best_cosines(flat_cells(cells), bank, how)))
        (height, width), _ = found[0]
        for turned in (False, True):
            if found[0][1][turned] is None:
                continue
            best = torch.cat([cosines[turned] for _, cosines in found])  # type: ignore[misc]
            for index, cells in enumerate(best.view(len(queries01), height, width)):
                bests[index][level, turned] = cells
    return bests


def query_cells(
    model: PADFormer, queries01: list[torch.Tensor], targets: torch.Tensor, level: int
) -> torch.Tensor:
    """``[B, C, h, w]`` unit cells of the queries at ``level`` times the model's size: at
    1x from their ``[B, M, F]`` ``targets`` (the CNN already ran), else the CNN on the
    magnified squares."""
    if level == 1:
        return cell_features(model, targets)
    size = model.config.img_size * level
    return level_cells(model, torch.cat([resize_square(q, size) for q in queries01]), level)
