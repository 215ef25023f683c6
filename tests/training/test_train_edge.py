"""Training the edge preset: the masked-feature term and the fused metric's scales."""

from __future__ import annotations

from pathlib import Path

import torch

from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.losses import masked_feature_loss
from padformer_edge_training.trainer import run_training
from tests.train_helpers import mvtec_like_tree, tiny_edge_recipe

TINY_EDGE = {
    "img_size": 64,
    "embed_dim": 32,
    "depth": 1,
    "num_heads": 2,
    "decoder_embed_dim": 32,
    "decoder_depth": 1,
    "decoder_num_heads": 2,
    "stn_channels": 8,
}


def test_masked_feature_loss_counts_only_masked_patches() -> None:
    target = torch.zeros(1, 4, 3)
    predicted = torch.tensor([[[1.0] * 3, [2.0] * 3, [100.0] * 3, [100.0] * 3]])
    mask = torch.tensor([[True, True, False, False]])
    # masked patches: squared errors 1 and 4, mean over channels then over masked patches
    assert float(masked_feature_loss(predicted, target, mask)) == 2.5


def test_edge_training_learns_features_and_stores_score_scales(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "data", {"a": 6, "b": 6}, padded=False, size=64)
    config = tiny_edge_recipe({"overrides": TINY_EDGE}, cross_view_epochs=2)
    summary = run_training(config, root, tmp_path / "run")
    model, _ = load_checkpoint(summary.checkpoint)
    assert model.preset_name == "edge" and model.config.cnn_tokens
    scales = model.score_scales
    assert bool((scales > 0).all()) and not torch.equal(scales, torch.ones(2))
    # The frozen CNN came through training untouched.
    fresh = build_model("edge", **TINY_EDGE).encoder.patch_embed.cnn.state_dict()
    for name, tensor in model.encoder.patch_embed.cnn.state_dict().items():
        assert torch.equal(tensor, fresh[name]), name
