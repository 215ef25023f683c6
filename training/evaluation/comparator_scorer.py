"""The comparator behind the evaluation protocol's ``Scorer`` interface.

``correction=False`` reads the same cells with the correction left out: the
nearest-reference distance alone at the comparator's input size, the floor the learned
score must beat, measured with exactly the same references and cells. ``readout`` says
how the cell map becomes a map and an image score (``comparator_readouts``; the default
is the product's).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.methods.compare.model import ComparisonModel
from padformer_edge.methods.compare.scorer import ReferenceCells, reference_cells, squares
from padformer_edge_training.evaluation.comparator_readouts import (
    ComparatorReadout,
    read,
    readout_maps,
)
from padformer_edge_training.evaluation.scorers import Scored


class ComparatorScorer:
    def __init__(
        self,
        model: ComparisonModel,
        name: str,
        correction: bool = True,
        readout: ComparatorReadout | None = None,
    ) -> None:
        self.model, self.name, self.correction = model.eval(), name, correction
        self.readout = readout or ComparatorReadout()
        self.references: ReferenceCells | None = None

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        cpu = torch.device("cpu")
        with torch.no_grad():
            self.references = reference_cells(
                self.model, [to_unit_tensor(r, cpu) for r in references]
            )

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.references is not None, "prepare() comes first"
        tensors = [to_unit_tensor(q, torch.device("cpu")) for q in queries]
        maps, cells = readout_maps(
            self.model, squares(self.model, tensors), self.references, self.readout,
            self.correction,
        )  # fmt: skip
        scored = []
        for i, query in enumerate(queries):
            score, amap = read(
                maps[i], cells[i], query.shape[:2], self.model.config.input_size, self.readout
            )
            scored.append(Scored(score, amap.numpy()))
        return scored
