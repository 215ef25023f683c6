"""The comparator behind the evaluation protocol's ``Scorer`` interface.

``correction=False`` reads the same cells with the correction left out: the
nearest-reference distance alone at the comparator's input size, the floor the learned
score must beat, measured with exactly the same references and cells. The cell map is
read as the product reads it (``detect.readout.smooth_cells``, resized once by
``map_geometry.frame_map``); research's other readouts extend ``cell_maps`` and ``read``
(``research/comparator_readouts.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.readout import smooth_cells
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge.methods.compare.scorer import (
    SCORE_SIGMA,
    ReferenceCells,
    reference_cells,
    squares,
)
from padformer_edge_training.evaluation.scorers import Scored


class ComparatorScorer:
    def __init__(self, model: ComparisonModel, name: str, correction: bool = True) -> None:
        self.model, self.name, self.correction = model.eval(), name, correction
        self.references: ReferenceCells | None = None

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        cpu = torch.device("cpu")
        with torch.no_grad():
            self.references = reference_cells(
                self.model, [to_unit_tensor(r, cpu) for r in references]
            )

    @torch.no_grad()
    def cell_maps(self, queries: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(``[B, s, s]`` maps before smoothing, ``[B, h, w]`` cell scores) of ``[B, 3,
        S, S]`` query squares in [0, 1]; the product's map is its cells."""
        assert self.references is not None, "prepare() comes first"
        result = self.model(
            self.model.cells(queries), self.references.upright, self.references.bank
        )
        cells = result.score if self.correction else result.distance
        return cells, cells

    def read(
        self, model_map: torch.Tensor, cells: torch.Tensor, query_size: tuple[int, int]
    ) -> tuple[float, torch.Tensor]:
        """(image score, ``[H, W]`` map at the query's size) from one query's map: read
        where the product's blur of ``SCORE_SIGMA`` model pixels is read, and resized once."""
        scale = max(query_size) / self.model.config.input_size  # query px per model px
        read_map = smooth_cells(model_map, query_size, SCORE_SIGMA * scale)
        amap = torch.from_numpy(frame_map(read_map.float().cpu().numpy(), query_size))
        return float(amap.max()), amap

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        tensors = [to_unit_tensor(q, torch.device("cpu")) for q in queries]
        maps, cells = self.cell_maps(squares(self.model, tensors))
        scored = []
        for i, query in enumerate(queries):
            score, amap = self.read(maps[i], cells[i], query.shape[:2])
            scored.append(Scored(score, amap.numpy()))
        return scored
