"""The feature STN: identity at initialisation, correct warps, any grid size."""

import pytest
import torch

from padformer_edge.model.stn import FeatureSTN


@pytest.mark.parametrize("grid", [2, 7, 8, 14])
def test_stn_at_init_returns_the_reference_grid_unchanged(grid):
    torch.manual_seed(0)
    stn = FeatureSTN(dim=16, grid_size=grid)
    query = torch.randn(2, 16, grid, grid)
    refs = torch.randn(2, 3, 16, grid, grid)
    aligned = stn(query, refs)
    assert aligned.shape == refs.shape
    assert (aligned - refs).abs().max() < 1e-5
    theta = stn.theta(query, refs)
    identity = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    assert torch.allclose(theta, identity.expand_as(theta))


def test_a_one_cell_translation_shifts_only_the_reference():
    stn = FeatureSTN(dim=4, grid_size=8)
    with torch.no_grad():  # x_src = x_out + 2/w: output column c reads input column c + 1
        stn.fc[-1].bias.copy_(torch.tensor([1.0, 0.0, 2.0 / 8, 0.0, 1.0, 0.0]))
    refs = torch.randn(1, 2, 4, 8, 8)
    aligned = stn(torch.randn(1, 4, 8, 8), refs)
    torch.testing.assert_close(aligned[..., :-1], refs[..., 1:])
    assert aligned[..., -1].abs().max() < 1e-6  # sampled outside: zero padding


def test_stn_gradients_reach_the_affine_parameters():
    stn = FeatureSTN(dim=4, grid_size=8)
    refs = torch.randn(1, 2, 4, 8, 8, requires_grad=True)
    stn(torch.randn(1, 4, 8, 8), refs).pow(2).mul(torch.randn(1, 2, 4, 8, 8)).sum().backward()
    assert stn.fc[-1].weight.grad.abs().sum() > 0
    assert stn.fc[-1].bias.grad.abs().sum() > 0
