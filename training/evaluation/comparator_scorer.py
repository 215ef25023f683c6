"""The comparator behind the evaluation protocol's ``Scorer`` interface.

``correction=False`` reads the same cells with the correction left out: the
nearest-reference distance alone at the comparator's input size, the floor the learned
score must beat, measured with exactly the same references and cells.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.comparison import ReferenceCells, compare, read_score, reference_cells
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.model.comparator import ComparisonModel
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

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.references is not None, "prepare() comes first"
        tensors = [to_unit_tensor(q, torch.device("cpu")) for q in queries]
        result = compare(self.model, tensors, self.references)
        cells = result.score if self.correction else result.distance
        scored = []
        for query, cell_scores in zip(queries, cells, strict=True):
            amap = read_score(cell_scores, query.shape[:2], self.model.config.input_size)
            scored.append(Scored(float(amap.max()), amap.numpy()))
        return scored
