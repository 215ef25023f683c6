"""Shapes through every public entry point, for each preset and each ablation switch."""

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.model.config import PRESETS, ModelConfig
from padformer_edge.model.padformer import PADFormer, ReferenceCache, build_model


def _images(cfg: ModelConfig, *lead: int) -> torch.Tensor:
    return torch.randn(*lead, 3, cfg.img_size, cfg.img_size)


@pytest.mark.parametrize(
    "overrides",
    [
        {},
        {"use_stn": False},
        {"use_selection": False},
        {"use_aat": False},
        {"use_stn": False, "use_selection": False, "use_aat": False},
    ],
)
def test_tiny_forward_shapes_for_every_ablation(overrides):
    torch.manual_seed(0)
    model = build_model("tiny", **overrides)
    cfg = model.config
    out, mask = model(_images(cfg, 2), _images(cfg, 2, 3))
    recon = out.pixels
    assert recon.shape == (2, 3, cfg.img_size, cfg.img_size)
    assert mask.shape == (2, cfg.num_patches) and mask.dtype == torch.bool
    assert torch.isfinite(recon).all()


def test_tiny_feature_cache_and_patch_shapes():
    torch.manual_seed(0)
    model = build_model("tiny")
    cfg = model.config
    assert (cfg.grid_size, cfg.num_patches) == (8, 64)
    feats = model.encode_features(_images(cfg, 5))
    assert feats.shape == (5, cfg.num_patches, cfg.embed_dim)
    cache = model.encode_references(_images(cfg, 1, 4))
    assert isinstance(cache, ReferenceCache) and cache.num_references == 4
    assert cache.tokens.shape == (1, 4, cfg.num_patches, cfg.decoder_embed_dim)
    imgs = _images(cfg, 3)
    assert model.patchify(imgs).shape == (3, cfg.num_patches, cfg.patch_size**2 * 3)
    assert torch.equal(model.unpatchify(model.patchify(imgs)), imgs)


def test_patchify_keeps_each_patch_together():
    model = build_model("tiny")
    p = model.config.patch_size
    imgs = torch.zeros(1, 3, 64, 64)
    imgs[0, :, p : 2 * p, 0:p] = 1.0  # second patch row, first column -> patch index 8
    patches = model.patchify(imgs)
    assert patches[0, 8].eq(1).all() and patches.sum() == p * p * 3


def test_a_single_reference_set_is_shared_across_the_query_batch():
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    cfg = model.config
    refs = _images(cfg, 1, 2)
    query = _images(cfg, 3)
    mask = model.random_mask(3, torch.Generator().manual_seed(1))
    with torch.no_grad():
        shared = model.reconstruct(query, model.encode_references(refs), mask)
        per_row = model.reconstruct(
            query, model.encode_references(refs.expand(3, -1, -1, -1, -1)), mask
        )
    torch.testing.assert_close(shared, per_row)


def test_normalize_round_trip():
    model = build_model("tiny")
    x = torch.rand(2, 3, 64, 64)
    torch.testing.assert_close(model.denormalize(model.normalize(x)), x)
    assert model.normalize(torch.full((1, 3, 1, 1), 0.485))[0, 0].abs().max() < 1e-6


def test_config_dict_round_trip_and_unknown_keys():
    for cfg in PRESETS.values():
        assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="unknown model config keys: bogus"):
        ModelConfig.from_dict({"bogus": 1})


def test_build_model_rejects_unknown_presets_and_settings():
    with pytest.raises(UserError, match="choose one of edge, paper, small, tiny"):
        build_model("huge")
    with pytest.raises(UserError, match="unknown model setting"):
        build_model("tiny", depht=3)
    with pytest.raises(UserError, match="multiple of patch_size"):
        build_model("tiny", img_size=60)


def test_wrong_input_shapes_name_the_expected_shape():
    model = build_model("tiny")
    with pytest.raises(ValueError, match=r"query must have shape \[B, 3, 64, 64\]"):
        model(torch.randn(1, 3, 32, 32), torch.randn(1, 2, 3, 64, 64))
    with pytest.raises(ValueError, match=r"refs must have shape \[B, N, 3, 64, 64\]"):
        model.encode_references(torch.randn(2, 3, 64, 64))
    cache = model.encode_references(torch.randn(2, 2, 3, 64, 64))
    with pytest.raises(ValueError, match="reference cache has batch 2"):
        model.reconstruct(torch.randn(3, 3, 64, 64), cache, model.random_mask(3))


def test_small_preset_forward_shape():
    torch.manual_seed(0)
    model = build_model("small")
    cfg = model.config
    recon = model(_images(cfg, 1), _images(cfg, 1, 2))[0].pixels
    assert recon.shape == (1, 3, cfg.img_size, cfg.img_size)


def test_paper_preset_matches_the_paper_and_runs_once_at_batch_one():
    cfg = PRESETS["paper"]
    assert (cfg.img_size, cfg.patch_size, cfg.embed_dim, cfg.depth, cfg.num_heads) == (
        224,
        16,
        768,
        12,
        12,
    )
    assert (cfg.decoder_embed_dim, cfg.decoder_depth, cfg.decoder_num_heads) == (512, 8, 16)
    assert (cfg.top_k, cfg.num_global_tokens, cfg.mask_ratio) == (10, 32, 0.4)
    torch.manual_seed(0)
    model = PADFormer(cfg).eval()
    with torch.no_grad():
        out, mask = model(_images(cfg, 1), _images(cfg, 1, 2))
        recon = out.pixels
    assert recon.shape == (1, 3, 224, 224)
    assert int(mask.sum()) == int(196 * 0.4)
    assert torch.isfinite(recon).all()
