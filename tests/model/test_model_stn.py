"""The feature STN: identity at initialisation, correct warps, any grid size, and a split
first convolution that matches the one over the concatenated grids."""

import copy

import pytest
import torch
import torch.nn.functional as F

from padformer_edge.model.stn import FeatureSTN, corner_weights, sampling_weights


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


def _concatenated_theta(stn, query, refs):
    """The localisation net as one convolution over [query ; reference] channels."""
    b, n = query.shape[0], refs.shape[1]
    pairs = torch.cat(
        [query.unsqueeze(1).expand(b, n, -1, -1, -1), refs.expand(b, -1, -1, -1, -1)], 2
    )
    return stn.fc(stn.localization(pairs.flatten(0, 1)).flatten(1)).view(b, n, 2, 3)


def _trained_looking_stn(dim, grid, seed):
    """An STN whose warp depends on its input (the identity init ignores the convolutions)."""
    torch.manual_seed(seed)
    stn = FeatureSTN(dim=dim, grid_size=grid)
    with torch.no_grad():
        stn.fc[-1].weight.normal_(std=0.1)
    return stn


def _first_conv_terms(stn: FeatureSTN) -> int:
    """Products summed per output of the first convolution: the longest sum in theta."""
    conv = stn.localization[0]
    return conv.in_channels * conv.kernel_size[0] * conv.kernel_size[1]


def _warp_bound(theta_error: float, refs: torch.Tensor, dtype: torch.dtype) -> float:
    """How far two bilinear warps of ``refs`` may differ when their thetas differ by at
    most ``theta_error`` and their sampling weights are rounded in ``dtype``.

    A sampling coordinate is theta_0 * x + theta_1 * y + theta_2 with |x|, |y| <= 1, so it
    moves by at most 3 * theta_error in normalised units, which is side / 2 pixels per
    unit; a bilinear sample moves by at most the largest step between neighbours
    (2 * max|refs|) per pixel. The weights come from coordinates scaled by the side, so
    each of the four is off by side * eps, times the value it multiplies.
    """
    side, largest = max(refs.shape[-2:]), refs.abs().max().item()
    moved = 3 * theta_error * (side / 2) * 2 * largest
    rounded = 4 * side * torch.finfo(dtype).eps * largest
    return moved + rounded


@pytest.mark.parametrize("grid", [8, 14])
@pytest.mark.parametrize("ref_batch", [1, 3])
def test_split_first_convolution_equals_the_concatenated_one(grid, ref_batch):
    """The same computation in two orders: equal to float64 rounding in float64, and in
    float32 (what runs) within bounds derived from the sums and the warp, not a fixed
    1e-5 that a machine rounding a little differently exceeds."""
    stn = _trained_looking_stn(dim=24, grid=grid, seed=grid)
    query, refs = torch.randn(3, 24, grid, grid), torch.randn(ref_batch, 4, 24, grid, grid)
    terms = _first_conv_terms(stn)
    with torch.no_grad():
        wide = copy.deepcopy(stn).double()
        exact = _concatenated_theta(wide, query.double(), refs.double())
        scale = exact.abs().max().item()
        for term in (None, wide.reference_term(refs.double())):
            torch.testing.assert_close(
                wide.theta(query.double(), refs.double(), term),
                exact,
                rtol=0,
                atol=terms * torch.finfo(torch.float64).eps * scale,
            )

        expected = _concatenated_theta(stn, query, refs)
        assert (expected - expected[:, :1]).abs().max() > 1e-3  # the warp really varies
        theta_atol = terms * torch.finfo(torch.float32).eps * scale  # worst-case sum rounding
        for term in (None, stn.reference_term(refs)):
            torch.testing.assert_close(
                stn.theta(query, refs, term), expected, rtol=0, atol=theta_atol
            )
        used = stn.theta(query, refs, stn.reference_term(refs))
        warped = stn(query, refs, stn.reference_term(refs))
    flat = refs.expand(3, -1, -1, -1, -1).flatten(0, 1)
    grid_xy = F.affine_grid(expected.flatten(0, 1), list(flat.shape), align_corners=False)
    reference = F.grid_sample(flat, grid_xy, mode="bilinear", align_corners=False)
    theta_error = (used - expected).abs().max().item()
    torch.testing.assert_close(
        warped,
        reference.view(3, 4, 24, grid, grid),
        rtol=0,
        atol=_warp_bound(theta_error, refs, torch.float32),
    )


def test_split_convolution_gives_the_concatenated_gradients():
    stn = _trained_looking_stn(dim=8, grid=8, seed=3)
    query, refs = torch.randn(2, 8, 8, 8), torch.randn(1, 3, 8, 8, 8)
    weights = torch.randn(2, 3, 2, 3)
    grads = []
    for theta in (lambda: stn.theta(query, refs), lambda: _concatenated_theta(stn, query, refs)):
        stn.zero_grad()
        (theta() * weights).sum().backward()
        conv = stn.localization[0]
        grads.append((conv.weight.grad.clone(), conv.bias.grad.clone()))
    for split, whole in zip(*grads, strict=True):
        assert split.abs().sum() > 0
        torch.testing.assert_close(split, whole)


@pytest.mark.parametrize("spread", [0.05, 0.5, 2.0])
def test_corner_weights_are_grid_samples_weights(spread):
    """The exported graphs' bilinear weights (one tent per axis) against ``grid_sample``'s
    over the one-hot basis, for warps from near-identity to ones that sample far outside
    the grid: the same cells, the same weights to float32 rounding."""
    gen = torch.Generator().manual_seed(int(spread * 100))
    identity = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]).view(1, 1, 2, 3)
    theta = identity + spread * torch.randn(3, 4, 2, 3, generator=gen)
    for size in [(8, 8), (12, 12), (5, 7)]:
        expected = sampling_weights(theta, size)
        found = corner_weights(theta, size)
        assert found.shape == expected.shape
        assert torch.equal(found == 0, expected == 0)
        # a source position inside the grid is up to ``side`` and rounded to eps of that
        # in either formula; each weight is a product of two tents
        bound = 4 * torch.finfo(torch.float32).eps * max(size)
        assert (found - expected).abs().max() < bound
