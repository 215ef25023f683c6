"""The comparator behind the evaluation protocol reads its cell map as the detector does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from padformer_edge.detect.images import read_image, to_unit_tensor
from padformer_edge.methods.compare.scorer import compare, reference_cells
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.comparator_scorer import ComparatorScorer
from tests.compare_readout import read_score

CPU = torch.device("cpu")


def test_the_scorer_reads_as_the_product(tiny_comparator, tiny_data: Path) -> None:
    model = tiny_comparator
    """The scorer's map and score are the detector's (one computation), and without the
    correction they are the distance alone on the same cells."""
    index = index_dataset(tiny_data)
    refs = [read_image(p) for p in index.good_train()["duck"][:2]]
    query = read_image(index.good_train()["duck"][2])
    cells = reference_cells(model, [to_unit_tensor(r, CPU) for r in refs])
    compared = compare(model, [to_unit_tensor(query, CPU)], cells)
    for correction, expected in ((True, compared.score[0]), (False, compared.distance[0])):
        scorer = ComparatorScorer(model, "x", correction=correction)
        scorer.prepare(refs)
        found = scorer.score([query])[0]
        amap = read_score(expected, query.shape[:2], model.config.input_size)
        np.testing.assert_array_equal(found.anomaly_map, amap.numpy())
        assert found.score == float(amap.max())
