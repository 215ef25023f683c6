"""Stage C of the small-defect work: how the comparator's cell map becomes a map and a score.

Today every score reads the cell map one way: upsample it to the query, smooth it by
``SCORE_SIGMA`` model pixels and take the maximum. A defect of a few cells at a fine grid
may be read better by a lighter smoothing, by the mean of the few highest cells (the
image term the finer-cell comparator trained on), or by several passes over the query
moved by half a cell, which sample the part on a grid twice as fine and say where the
passes disagree (the design card's multi-pass detection, combined with the paper's
consistency filter or the maximum). Each readout is named by a short word:

- ``sS``: the maximum of the map smoothed by ``S`` model pixels (``s2`` is today's);
- ``topK``: the image score is the mean of the ``K`` highest cells; the map is today's;
- ``shiftN-mean|max|filter``: ``N`` passes (4: the query moved by half a cell down, right
  and both; 9: by thirds), their maps brought back to the query's frame and combined by
  their mean, their maximum, or the mean kept where their variance is above its median
  (``consistency_filter``); then today's smoothing and maximum.

Readouts are research options: the one that wins on validation is built into the product
(``s2``, which ``ComparatorScorer`` reads by itself). ``ReadoutScorer`` is that scorer
with a readout.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.readout import consistency_filter, smooth_cells
from padformer_edge.detect.tensor_ops import upsample
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge.methods.compare.scorer import SCORE_SIGMA, ReferenceCells
from padformer_edge_training.evaluation.comparator_scorer import ComparatorScorer

CELL = 8  # model pixels per cell of the stride-8 grid
COMBINES = ("mean", "max", "filter")


class ComparatorReadout(NamedTuple):
    """A parsed readout word (see the module docstring)."""

    sigma: float = SCORE_SIGMA
    top_k: int = 0  # 0: the image score is the smoothed map's maximum
    passes: int = 1
    combine: str = "mean"

    @property
    def text(self) -> str:
        if self.passes > 1:
            return f"shift{self.passes}-{self.combine}"
        return f"top{self.top_k}" if self.top_k else f"s{self.sigma:g}"


def parse_readout(text: str) -> ComparatorReadout:
    """'s1' / 'top4' / 'shift4-filter' -> ComparatorReadout, or one sentence naming the forms."""
    try:
        if text.startswith("shift"):
            count, combine = text.removeprefix("shift").split("-")
            if int(count) not in (4, 9) or combine not in COMBINES:
                raise ValueError(text)
            return ComparatorReadout(passes=int(count), combine=combine)
        if text.startswith("top"):
            k = int(text.removeprefix("top"))
            if k < 1:
                raise ValueError(text)
            return ComparatorReadout(top_k=k)
        if text.startswith("s"):
            sigma = float(text.removeprefix("s"))
            if not 0 <= sigma <= 8:
                raise ValueError(text)
            return ComparatorReadout(sigma=sigma)
        raise ValueError(text)
    except ValueError:
        raise UserError(
            f"readout '{text}' is not sS (0-8), topK, shift4-/shift9- with mean, max or "
            "filter; e.g. s1, top4, shift4-filter."
        ) from None


def pass_offsets(passes: int) -> list[tuple[int, int]]:
    """Model-pixel moves (down, right) of each pass: a half-cell lattice for 4 passes, a
    third-cell one for 9; the first pass is the query itself."""
    steps = 2 if passes == 4 else 3
    return [
        (round(CELL * i / steps), round(CELL * j / steps))
        for i in range(steps)
        for j in range(steps)
    ]


def moved(squares: torch.Tensor, down: int, right: int) -> torch.Tensor:
    """``[B, 3, S, S]`` with the content moved ``down`` and ``right`` pixels, the edge repeated."""
    if not down and not right:
        return squares
    size = squares.shape[-1]
    return F.pad(squares, (right, 0, down, 0), mode="replicate")[..., :size, :size]


def moved_back(amaps: torch.Tensor, down: int, right: int) -> torch.Tensor:
    """The inverse of ``moved`` on ``[B, 1, S, S]`` maps (the far edge repeated)."""
    if not down and not right:
        return amaps
    return F.pad(amaps[..., down:, right:], (0, right, 0, down), mode="replicate")


@torch.no_grad()
def readout_maps(
    model: ComparisonModel,
    squares: torch.Tensor,
    references: ReferenceCells,
    readout: ComparatorReadout,
    correction: bool,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(``[B, s, s]`` maps before smoothing, ``[B, h, w]`` cell scores of the unmoved
    pass) for ``[B, 3, S, S]`` query squares in [0, 1]. One pass's map is its cells (so
    ``s2`` reads exactly as today); several passes' maps are at the input size ``S``."""
    size = squares.shape[-1]
    maps, first = [], None
    for down, right in pass_offsets(readout.passes) if readout.passes > 1 else [(0, 0)]:
        result = model(
            model.cells(moved(squares, down, right)), references.upright, references.bank
        )
        cells = result.score if correction else result.distance
        if first is None:
            first = cells
            if readout.passes == 1:
                return cells, cells
        maps.append(moved_back(upsample(cells[:, None], (size, size)), down, right)[:, 0])
    stack = torch.stack(maps)  # [P, B, S, S]
    if readout.combine == "max":
        return stack.amax(0), first
    mean = stack.mean(0)
    if readout.combine == "mean":
        return mean, first
    variance = stack.var(0, unbiased=False)
    return torch.stack(
        [consistency_filter(m, v) for m, v in zip(mean, variance, strict=True)]
    ), first


def read(
    model_map: torch.Tensor,
    cells: torch.Tensor,
    query_size: tuple[int, int],
    input_size: int,
    readout: ComparatorReadout,
) -> tuple[float, torch.Tensor]:
    """(image score, ``[H, W]`` anomaly map at the query's size) from one query's map
    (``readout_maps``) and its cell scores ``[h, w]``; ``input_size`` is the model's."""
    scale = max(query_size) / input_size  # query pixels per model pixel
    # the product's cell readout (``detect.readout.smooth_cells``): read where its blur
    # is read and resized once, to the query (``map_geometry.frame_map``), so ``s2`` is
    # the detector's map and score
    read_map = smooth_cells(model_map, query_size, readout.sigma * scale)
    amap = torch.from_numpy(frame_map(read_map.float().cpu().numpy(), query_size))
    amap = amap.to(model_map.device)
    if readout.top_k:
        k = min(readout.top_k, cells.numel())
        return float(cells.flatten().topk(k).values.mean()), amap
    return float(amap.max()), amap


class ReadoutScorer(ComparatorScorer):
    """``ComparatorScorer`` reading its cell map by ``readout`` (``ComparatorReadout()``:
    the product's, exactly as the plain scorer reads it)."""

    def __init__(
        self,
        model: ComparisonModel,
        name: str,
        correction: bool = True,
        readout: ComparatorReadout | None = None,
    ) -> None:
        super().__init__(model, name, correction)
        self.readout = readout or ComparatorReadout()

    def cell_maps(self, queries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        assert self.references is not None, "prepare() comes first"
        return readout_maps(self.model, queries, self.references, self.readout, self.correction)

    def read(
        self, model_map: torch.Tensor, cells: torch.Tensor, query_size: tuple[int, int]
    ) -> tuple[float, torch.Tensor]:
        return read(model_map, cells, query_size, self.model.config.input_size, self.readout)
