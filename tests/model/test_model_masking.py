"""MAE-style masking: exact counts, invertible shuffles, masked pixels truly hidden."""

import pytest
import torch

from padformer_edge.model.encoder import gather_tokens, random_mask, shuffle_ids
from padformer_edge.model.padformer import build_model


@pytest.mark.parametrize(("patches", "ratio"), [(64, 0.4), (196, 0.4), (49, 0.75), (16, 0.0)])
def test_random_mask_masks_exactly_the_ratio(patches, ratio):
    mask = random_mask(6, patches, ratio, torch.Generator().manual_seed(3))
    assert mask.dtype == torch.bool
    assert mask.sum(dim=1).tolist() == [int(patches * ratio)] * 6


def test_unshuffle_of_shuffle_is_identity_and_visible_come_first():
    mask = random_mask(4, 64, 0.4, torch.Generator().manual_seed(0))
    x = torch.randn(4, 64, 5)
    ids_shuffle, ids_restore, visible = shuffle_ids(mask)
    assert visible == 64 - int(64 * 0.4)
    shuffled = gather_tokens(x, ids_shuffle)
    assert torch.equal(gather_tokens(shuffled, ids_restore), x)
    kept = ids_shuffle[:, :visible]
    assert not torch.gather(mask, 1, kept).any()
    assert torch.gather(mask, 1, ids_shuffle[:, visible:]).all()


def test_masks_with_different_counts_per_row_are_rejected():
    mask = torch.zeros(2, 16, dtype=torch.bool)
    mask[0, :3] = True
    with pytest.raises(ValueError, match="same number of patches"):
        shuffle_ids(mask)


def test_model_mask_follows_the_generator():
    model = build_model("tiny")
    a = model.random_mask(3, torch.Generator().manual_seed(7))
    b = model.random_mask(3, torch.Generator().manual_seed(7))
    c = model.random_mask(3, torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert a.sum(dim=1).tolist() == [int(64 * 0.4)] * 3


def test_pixels_under_the_mask_cannot_influence_the_reconstruction():
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    query = torch.randn(1, 3, 64, 64)
    mask = model.random_mask(1, torch.Generator().manual_seed(2))
    cache = model.encode_references(torch.randn(1, 2, 3, 64, 64))
    tampered = model.patchify(query)
    tampered[mask] = 99.0
    with torch.no_grad():
        clean = model.reconstruct(query, cache, mask)
        dirty = model.reconstruct(model.unpatchify(tampered), cache, mask)
        unmasked_change = model.reconstruct(
            model.unpatchify(tampered), cache, torch.zeros_like(mask)
        )
    assert torch.equal(clean, dirty)
    assert not torch.allclose(clean, unmasked_change)
