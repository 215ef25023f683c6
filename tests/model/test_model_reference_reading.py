"""The reference-reading decoder: blob masks, and masked positions that cannot read the query.

With ``isolate_masked`` a masked position's output may depend on the references, the learned
priors and its position, and on the query's visible content only through the STN's affine
parameters. These tests pin each half: the references move it, the visible content does not
(exactly, when the STN's parameters are held), and the paper's decoder is the control that
does copy from its visible neighbours.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.decoder import isolation_mask
from padformer_edge.model.encoder import block_mask, random_mask
from padformer_edge.model.padformer import build_model
from padformer_edge_training.trainer import reconfigure

ISOLATED = {"isolate_masked": True, "mask_ratio": 0.75, "mask_shape": "blocks", "mask_block": 3}


def _masked_neighbour_share(mask: torch.Tensor, grid: int) -> float:
    """Of the 4-neighbours of masked patches, the share that are masked too."""
    m = mask.view(-1, grid, grid).float()
    pairs = (m[:, 1:] * m[:, :-1]).sum() + (m[:, :, 1:] * m[:, :, :-1]).sum()
    edges = (
        m[:, 1:].sum() + m[:, :-1].sum() + m[:, :, 1:].sum() + m[:, :, :-1].sum()
    )  # each masked patch's neighbour slots
    return float(2 * pairs / edges)


@pytest.mark.parametrize(("grid", "ratio", "block"), [(12, 0.9, 4), (8, 0.5, 3), (14, 0.4, 2)])
def test_block_mask_hides_exactly_the_ratio(grid: int, ratio: float, block: int) -> None:
    mask = block_mask(5, grid, ratio, block, torch.Generator().manual_seed(1))
    assert mask.dtype == torch.bool and mask.shape == (5, grid * grid)
    assert mask.sum(dim=1).tolist() == [int(grid * grid * ratio)] * 5


def test_block_masks_are_blobs_where_random_masks_are_scattered() -> None:
    grid, generator = 12, torch.Generator().manual_seed(0)
    blobs = _masked_neighbour_share(block_mask(64, grid, 0.5, 4, generator), grid)
    scattered = _masked_neighbour_share(random_mask(64, grid * grid, 0.5, generator), grid)
    # a scattered mask's neighbours are masked at about the ratio; a blob's mostly are
    assert scattered < 0.6 < 0.8 < blobs


def test_the_model_draws_the_mask_shape_its_config_names() -> None:
    model = build_model("tiny", mask_shape="blocks", mask_ratio=0.5, mask_block=3)
    drawn = model.random_mask(4, torch.Generator().manual_seed(5))
    expected = block_mask(4, 8, 0.5, 3, torch.Generator().manual_seed(5))
    assert torch.equal(drawn, expected)
    with pytest.raises(UserError, match="mask_shape must be one of random, blocks"):
        build_model("tiny", mask_shape="stripes")


def test_isolation_mask_lets_masked_rows_read_only_masked_columns() -> None:
    masked = torch.tensor([[True, False, True]])
    allowed = isolation_mask(masked)[0, 0]  # rows and columns: CLS, p0, p1, p2
    assert allowed.shape == (4, 4)
    assert allowed[0].all() and allowed[2].all()  # CLS and the visible patch read everything
    assert allowed[1].tolist() == [False, True, False, True]
    assert allowed[3].tolist() == [False, True, False, True]


def _model(**changes: object):
    torch.manual_seed(0)
    model = build_model("tiny", **changes).eval()
    with torch.no_grad():  # leave the STN's identity start, so alignment depends on the query
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return model


def _masked_outputs(model, query, refs, mask) -> torch.Tensor:
    with torch.no_grad():
        pixels = model.reconstruct(query, model.encode_references(refs), mask)
    return model.patchify(pixels)[mask]


def _other_visible_content(model, query, mask) -> torch.Tensor:
    patches = model.patchify(query)
    patches[~mask] = torch.randn_like(patches[~mask])
    return model.unpatchify(patches)


def _hold_alignment(model, query, refs) -> None:
    """Freeze every layer's STN output at what ``query`` gives, whatever the query."""
    for layer in model.decoder.layers:
        layer.stn.theta = _recorded_theta(layer.stn.theta)
    with torch.no_grad():
        model.reconstruct(query, model.encode_references(refs), model.random_mask(1))


def _recorded_theta(theta):
    seen: list[torch.Tensor] = []

    def replay(*args: torch.Tensor) -> torch.Tensor:
        if not seen:
            seen.append(theta(*args))
        return seen[0]

    return replay


def test_isolated_masked_outputs_see_the_query_only_through_alignment() -> None:
    model = _model(**ISOLATED)
    generator = torch.Generator().manual_seed(2)
    query, refs = torch.randn(1, 3, 64, 64), torch.randn(1, 2, 3, 64, 64)
    mask = model.random_mask(1, generator)
    other = _other_visible_content(model, query, mask)
    _hold_alignment(model, query, refs)
    assert torch.equal(
        _masked_outputs(model, query, refs, mask), _masked_outputs(model, other, refs, mask)
    )


def test_without_an_stn_isolated_masked_outputs_ignore_the_visible_query() -> None:
    model = _model(use_stn=False, **ISOLATED)
    query, refs = torch.randn(1, 3, 64, 64), torch.randn(1, 2, 3, 64, 64)
    mask = model.random_mask(1, torch.Generator().manual_seed(3))
    other = _other_visible_content(model, query, mask)
    assert torch.equal(
        _masked_outputs(model, query, refs, mask), _masked_outputs(model, other, refs, mask)
    )


def test_the_papers_decoder_copies_visible_content_into_masked_outputs() -> None:
    model = _model(use_stn=False, mask_shape="blocks", mask_ratio=0.75, mask_block=3)
    query, refs = torch.randn(1, 3, 64, 64), torch.randn(1, 2, 3, 64, 64)
    mask = model.random_mask(1, torch.Generator().manual_seed(3))
    other = _other_visible_content(model, query, mask)
    change = _masked_outputs(model, query, refs, mask) - _masked_outputs(model, other, refs, mask)
    assert float(change.abs().max()) > 1e-3


def test_isolated_masked_outputs_follow_the_references() -> None:
    model = _model(**ISOLATED)
    query = torch.randn(1, 3, 64, 64)
    mask = model.random_mask(1, torch.Generator().manual_seed(4))
    good, black = torch.randn(1, 2, 3, 64, 64), torch.zeros(1, 2, 3, 64, 64)
    change = _masked_outputs(model, query, good, mask) - _masked_outputs(model, query, black, mask)
    assert float(change.abs().max()) > 1e-3


def test_the_reference_reading_design_round_trips_through_a_checkpoint(tmp_path: Path) -> None:
    model = _model(**ISOLATED)
    path = tmp_path / "isolated.safetensors"
    save_checkpoint(path, model, {"note": "test"})
    loaded, _ = load_checkpoint(path)
    assert loaded.config == model.config and loaded.config.isolate_masked
    query, refs = torch.randn(1, 3, 64, 64), torch.randn(1, 2, 3, 64, 64)
    mask = model.random_mask(1, torch.Generator().manual_seed(6))
    assert torch.equal(
        _masked_outputs(model, query, refs, mask), _masked_outputs(loaded, query, refs, mask)
    )


def test_init_overrides_change_switches_and_refuse_shape_changes() -> None:
    model = _model()
    tuned = reconfigure(model, ISOLATED)
    assert tuned.config.isolate_masked and tuned.config.mask_shape == "blocks"
    for name, value in model.state_dict().items():
        assert torch.equal(tuned.state_dict()[name], value), name
    with pytest.raises(UserError, match="init_overrides do not fit the --init checkpoint"):
        reconfigure(model, {"decoder_embed_dim": 64})
    with pytest.raises(UserError, match="init_overrides do not fit"):
        reconfigure(model, {"no_such_setting": 1})
