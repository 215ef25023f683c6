"""The pointer's choice read as candidates (training/evaluation/pointer_candidates.py).

With every reference patch a candidate, each predicted cell is the nearest reference
cell to the query's own, so the per-cell error is the brute-force nearest-reference
distance; with fewer candidates the error can only grow (the candidate sets are nested),
and every predicted cell is a cell of a proposed reference patch.
"""

# ruff: noqa: F811  (`model` is the pointer-model fixture of test_model_reference_pointer)
from __future__ import annotations

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.model.padformer import PADFormer, build_model
from padformer_edge_training.evaluation.pointer_candidates import (
    CandidateReadout,
    nearest_of_candidates,
)
from tests.test_model_reference_pointer import _images, model  # noqa: F401  (a fixture)
from tests.test_train_edge import TINY_EDGE

EPS = torch.finfo(torch.float32).eps


def _cell_errors(model: PADFormer, predicted: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """[B, M, cells^2] squared distance per cell."""
    per_cell = model.config.cells_per_side**2
    return (predicted - truth).square().unflatten(-1, (-1, per_cell)).sum(-2)


def _brute_force_nearest(model: PADFormer, targets: torch.Tensor, truth: torch.Tensor):
    """[B, M, cells^2] squared distance of each query cell to its nearest reference cell."""
    per_cell = model.config.cells_per_side**2
    bank = targets.flatten(0, 2).unflatten(-1, (-1, per_cell)).transpose(-1, -2).flatten(0, 1)
    cells = truth.unflatten(-1, (-1, per_cell)).transpose(-1, -2)  # [B, M, c2, C]
    return torch.cdist(cells.double(), bank.double()).square().amin(-1)


def _readout(model: PADFormer, candidates: int, seed: int = 1):
    query, refs = _images(model, 2, seed=seed), _images(model, 1, 2, seed=seed + 1)
    twin = CandidateReadout.of(model, candidates)
    mask = model.random_mask(2, torch.Generator().manual_seed(seed))
    with torch.no_grad():
        cache = twin.encode_references(refs)
        predicted = twin.reconstruct_all(query, cache, mask).features
        truth = twin.target_features(query)
    return predicted, truth, cache


def test_every_candidate_gives_the_nearest_reference_distance(model: PADFormer) -> None:
    pool = 2 * model.config.num_patches
    predicted, truth, cache = _readout(model, pool)
    errors = _cell_errors(model, predicted, truth).double()
    nearest = _brute_force_nearest(model, cache.targets, truth)
    # the argmin is taken in float32 from |q|^2 - 2 q.r + |r|^2: a near tie may pick a
    # cell whose distance differs by the float32 rounding of those terms
    scale = truth.square().sum(-1).amax() / model.config.cells_per_side**2
    tolerance = 8 * EPS * float(scale) * truth.shape[-1]
    assert torch.allclose(errors, nearest, rtol=0, atol=tolerance)


def test_fewer_candidates_never_lower_the_error(model: PADFormer) -> None:
    previous = None
    for candidates in (model.config.num_patches * 2, 16, 4, 1):
        predicted, truth, _ = _readout(model, candidates)
        errors = _cell_errors(model, predicted, truth)
        if previous is not None:
            slack = 8 * EPS * float(truth.square().sum(-1).amax())
            assert (errors >= previous - slack).all()
        previous = errors


def test_one_candidate_predicts_cells_of_the_pointed_patch(model: PADFormer) -> None:
    pool = torch.randn(1, 2, model.config.num_patches, model.config.feature_dim)
    logits = torch.randn(3, model.config.num_patches, pool.shape[1] * pool.shape[2])
    truth = torch.randn(3, model.config.num_patches, model.config.feature_dim)
    cells = model.config.cells_per_side
    predicted = nearest_of_candidates(logits, pool, truth, 1, cells)
    pointed = pool.flatten(1, 2)[0][logits.argmax(-1)]  # [3, M, F]
    per_cell = cells * cells
    allowed = pointed.unflatten(-1, (-1, per_cell)).transpose(-1, -2)  # [3, M, c2, C]
    got = predicted.unflatten(-1, (-1, per_cell)).transpose(-1, -2)
    # each predicted cell equals one of the pointed patch's cells, exactly
    matches = (got.unsqueeze(-2) == allowed.unsqueeze(-3)).all(-1).any(-1)
    assert matches.all()


def test_candidates_are_bounded_and_need_a_pointer_model(model: PADFormer) -> None:
    logits = torch.zeros(1, 4, 8)
    with pytest.raises(ValueError, match="candidates must be between 1 and 8"):
        nearest_of_candidates(logits, torch.zeros(1, 2, 4, 4), torch.zeros(1, 4, 4), 9, 1)
    head_model = build_model("edge", **TINY_EDGE)
    with pytest.raises(UserError, match="feature_readout: references"):
        CandidateReadout.of(head_model, 4)
