"""EfficientNet-Lite2 as a token source and as PatchCore's backbone (issue 30, item 3)."""

from __future__ import annotations

import sys

import pytest
import torch

from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.reference_cache import read_cache, write_cache
from padformer_edge.model.backbone import efficientnet_weights_path
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.config import BACKBONES, EDGE, LITE0_MEAN, LITE0_STD
from padformer_edge.model.padformer import build_model
from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config
from tests.detect_images import product_image, with_defect
from tests.model.test_model_edge import SMALL_EDGE, check_fused_detection

LITE2 = "efficientnet-lite2"
LITE2_MODULE = BACKBONES[LITE2].module


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("edge", **SMALL_EDGE, token_source=LITE2).eval()


def _images(model, *lead, seed=0):
    size = model.config.img_size
    return torch.randn(*lead, 3, size, size, generator=torch.Generator().manual_seed(seed))


def test_every_backbone_takes_the_tf_lite_input_scaling_the_edge_preset_uses():
    """The models normalise with LITE0_MEAN/STD whatever their token source; timm's own
    configuration of each network says that is what its ImageNet weights expect."""
    import timm

    for spec in BACKBONES.values():
        cfg = timm.get_pretrained_cfg(spec.timm_name)
        assert (cfg.mean, cfg.std) == (LITE0_MEAN, LITE0_STD), spec.timm_name


def test_lite2_tokens_have_the_wider_stride8_block_and_the_same_grid(model):
    cfg = model.config
    assert cfg.feature_dim == 48 * 2 * 2  # 48 channels per cell, 2x2 cells per patch
    assert EDGE.feature_dim == 40 * 2 * 2  # Lite0 keeps its width
    assert cfg.grid_size == 4
    with torch.no_grad():
        maps = model.encoder.patch_embed.cnn(_images(model, 2))
        target = model.target_features(_images(model, 2))
        out, _ = model(_images(model, 2), _images(model, 2, 3, seed=1))
    assert maps.shape == (2, 48, 8, 8)
    assert target.shape == (2, cfg.num_patches, cfg.feature_dim)
    assert out.features.shape == (2, cfg.num_patches, cfg.feature_dim)
    assert out.pixels.shape == (2, 3, 64, 64)


def test_lite2_tokens_load_the_packaged_imagenet_weights(model):
    """The stem and the last layer of the stride-8 block, checked by their names in the
    package's own file (not by the position-pairing the loader itself uses)."""
    source = torch.load(efficientnet_weights_path(LITE2), map_location="cpu", weights_only=True)
    cnn = model.encoder.patch_embed.cnn
    assert torch.equal(cnn.stem[0].weight, source["_conv_stem.weight"])
    assert torch.equal(cnn.stem[1].running_var, source["_bn0.running_var"])
    last = cnn.blocks[2][-1]  # Lite2 block 2 is the file's blocks 4-6 (1 + 3 before it)
    assert torch.equal(last.conv_pwl.weight, source["_blocks.6._project_conv.weight"])
    assert torch.equal(last.bn3.running_mean, source["_blocks.6._bn2.running_mean"])
    assert "_blocks.7._project_conv.weight" in source  # block 3 is not in the token source
    assert not any(name.startswith("blocks.3") for name in cnn.state_dict())


def test_lite2_tokens_stay_frozen_through_a_training_step():
    model = build_model("edge", **SMALL_EDGE, token_source=LITE2)
    cnn = model.encoder.patch_embed.cnn
    assert not any(p.requires_grad for p in cnn.parameters())
    before = {k: v.clone() for k, v in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    assert not cnn.training  # BN statistics stay ImageNet's
    out, _ = model(_images(model, 2), _images(model, 2, 3, seed=1))
    loss = out.pixels.square().mean() + out.features.square().mean()
    loss.backward()
    optimizer.step()
    after = model.state_dict()
    cnn_keys = [k for k in before if k.startswith("encoder.patch_embed.cnn.")]
    assert cnn_keys and all(torch.equal(before[k], after[k]) for k in cnn_keys)
    # the step did move the trainable part, the projection reading the CNN included
    assert not torch.equal(
        before["encoder.patch_embed.proj.weight"], after["encoder.patch_embed.proj.weight"]
    )


def test_cached_lite2_references_give_bit_identical_features_across_a_checkpoint(
    model, tmp_path, monkeypatch
):
    """References encoded once, saved as a profile's cache and read back by the same
    weights loaded from a checkpoint (without the Lite2 package: the checkpoint carries
    the CNN), reconstruct exactly what encoding them afresh does."""
    refs = _images(model, 1, 3, seed=1)
    query = _images(model, 2, seed=2)
    mask = model.random_mask(2, torch.Generator().manual_seed(0))
    with torch.no_grad():
        fresh = model.encode_references(refs)
        expected = model.reconstruct_all(query, fresh, mask)
        write_cache(tmp_path / "refs.safetensors", "key", fresh)
        save_checkpoint(tmp_path / "lite2.safetensors", model)
        monkeypatch.setitem(sys.modules, LITE2_MODULE, None)  # the package is gone
        assert efficientnet_weights_path(LITE2) is None
        loaded, _ = load_checkpoint(tmp_path / "lite2.safetensors")
        loaded.eval()
        cached = read_cache(tmp_path / "refs.safetensors", "key", loaded, torch.device("cpu"))
        assert cached is not None
        assert torch.equal(cached.features, fresh.features)
        assert torch.equal(cached.tokens, fresh.tokens)
        assert torch.equal(loaded.encode_references(refs).features, fresh.features)
        got = loaded.reconstruct_all(query, cached, mask)
    assert loaded.config.token_source == LITE2
    assert torch.equal(got.pixels, expected.pixels)
    assert torch.equal(got.features, expected.features)


def test_lite2_model_detects_end_to_end_with_the_fused_metric(model):
    """The fused metric's reference banks and feature maps take the token source's width:
    the edge preset's detection check, on Lite2 tokens."""
    check_fused_detection(model)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2@448 turned lite2", ((2,), 448, True, LITE2)),
        ("2+3@224 lite2", ((2, 3), 224, False, LITE2)),
        ("2@448 turned", ((2,), 448, True, "efficientnet-lite0")),
        ("2+3@224", ((2, 3), 224, False, "efficientnet-lite0")),
    ],
)
def test_patchcore_configurations_parse_and_print_back(text, expected):
    config = parse_config(text)
    assert config == expected
    assert config.text == text
    assert parse_config(config.text) == config


@pytest.mark.parametrize("text", ["2@448 lite2 turned", "2@448 lite3", "2@448 turned turned"])
def test_patchcore_refuses_a_backbone_word_out_of_place(text):
    with pytest.raises(UserError, match=r"is not STAGES@SIZE\[ turned\]\[ lite0\|lite2\]"):
        parse_config(text)


def test_patchcore_on_lite2_scores_its_own_bank_zero_and_a_defect_higher():
    references = [product_image(64, 64, seed=s) for s in range(2)]
    query = with_defect(product_image(64, 64, seed=0), (20, 20, 12, 12))
    lite2, lite0 = (PatchCoreScorer(*parse_config(f"2@64{suffix}")) for suffix in (" lite2", ""))
    assert lite2.name == "PatchCore (EfficientNet-Lite2)"
    for scorer in (lite2, lite0):
        scorer.prepare(references)
    # 2 references x 8 x 8 stride-8 cells; Lite2's block 2 is 48 wide, Lite0's 40
    assert lite2.bank.shape == (2 * 8 * 8, 48) and lite0.bank.shape == (2 * 8 * 8, 40)
    own, defect = lite2.score([references[0], query])
    # the query's cells are the bank's own: zero up to cdist's float32 rounding
    assert own.score == pytest.approx(0.0, abs=1e-3)
    assert defect.score > 0.1 and defect.anomaly_map.shape == (64, 64)


def test_lite2_without_its_package_is_one_sentence_saying_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, LITE2_MODULE, None)
    for make in (
        lambda: build_model("edge", **SMALL_EDGE, token_source=LITE2),
        lambda: PatchCoreScorer(*parse_config("2@224 turned lite2")),
    ):
        with pytest.raises(UserError) as caught:
            make()
        message = str(caught.value)
        assert message.endswith("pip install 'padformer-edge[lite2]'.")
        assert "EfficientNet-Lite2" in message and "\n" not in message
        assert message.count(". ") == 0  # one sentence
    build_model("edge", **SMALL_EDGE)  # Lite0 does not need it


def test_training_a_lite2_model_keeps_its_cnn_and_stores_it(tmp_path):
    """The trainer (not a hand-written step) leaves the Lite2 CNN as ImageNet's, and the
    checkpoint it writes rebuilds a Lite2 model."""
    from padformer_edge_training.trainer import run_training
    from tests.train_helpers import mvtec_like_tree, tiny_edge_recipe
    from tests.training.test_train_edge import TINY_EDGE

    overrides = {**TINY_EDGE, "token_source": LITE2}
    root = mvtec_like_tree(tmp_path / "data", {"a": 6}, padded=False, size=64)
    config = tiny_edge_recipe({"overrides": overrides})
    trained, _ = load_checkpoint(run_training(config, root, tmp_path / "run").checkpoint)
    assert trained.config.token_source == LITE2 and trained.config.feature_dim == 192
    fresh = build_model("edge", **overrides)
    cnn = trained.encoder.patch_embed.cnn.state_dict()
    for name, tensor in fresh.encoder.patch_embed.cnn.state_dict().items():
        assert torch.equal(cnn[name], tensor), name
