"""Teaching a trained edge model the reference-reading design, and re-measuring its scales."""

from __future__ import annotations

from pathlib import Path

import torch

from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.score_scales import parse_change, rescale_checkpoint
from padformer_edge_training.trainer import run_training
from tests.train_helpers import mvtec_like_tree, tiny_edge_recipe
from tests.training.test_train_edge import TINY_EDGE

DESIGN = {
    "isolate_masked": True,
    "mask_shape": "blocks",
    "mask_ratio": 0.75,
    "mask_block": 2,
    "score_masked_cells": True,
}


def test_a_trained_model_is_fine_tuned_into_the_reference_reading_design(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "data", {"a": 6, "b": 6}, padded=False, size=64)
    torch.manual_seed(0)
    start = tmp_path / "start.safetensors"
    save_checkpoint(start, build_model("edge", **TINY_EDGE), {"global_step": 7})
    recipe = tiny_edge_recipe({"init_overrides": DESIGN}, loss={"unseen_share": 0.25})
    summary = run_training(recipe, root, tmp_path / "run", init=start)
    tuned, metadata = load_checkpoint(summary.checkpoint)
    for name, value in DESIGN.items():
        assert getattr(tuned.config, name) == value, name
    assert tuned.config.img_size == 64 and metadata["init"]["path"] == str(start)
    assert bool((tuned.score_scales > 0).all())


def test_a_scoring_switch_is_applied_to_a_copy_with_scales_measured_anew(tmp_path: Path) -> None:
    root = mvtec_like_tree(tmp_path / "data", {"a": 6}, padded=False, size=64)
    torch.manual_seed(0)
    source = tmp_path / "model.safetensors"
    save_checkpoint(source, build_model("edge", **TINY_EDGE, mask_ratio=0.75), {"note": "x"})
    plain = rescale_checkpoint(source, root, num_refs=2)
    copy = tmp_path / "hidden.safetensors"
    change = dict([parse_change("score_masked_cells=true")])
    hidden = rescale_checkpoint(source, root, num_refs=2, changes=change, out=copy)
    model, metadata = load_checkpoint(copy)
    assert (
        model.config.score_masked_cells and not load_checkpoint(source)[0].config.score_masked_cells
    )
    assert metadata["changes"] == {"score_masked_cells": True}
    assert hidden["lab"] == plain["lab"]  # the LAB map does not change
    assert hidden["feature"] != plain["feature"]  # the feature map leaves visible patches out
    assert torch.allclose(model.score_scales, torch.tensor([hidden["lab"], hidden["feature"]]))
