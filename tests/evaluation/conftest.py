"""A tiny rendered dataset and a tiny random-weight checkpoint, shared by the eval tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.synth import ViewCounts, render_dataset


@pytest.fixture(scope="session")
def tiny_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval") / "synth"
    return render_dataset(
        ["builtin:duck", "builtin:lego"],
        out,
        ViewCounts(train=6, test_per_defect=1, test_good=2),
        64,
    )


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("ckpt") / "tiny.safetensors"
    save_checkpoint(path, build_model("tiny"))
    return path


@pytest.fixture(scope="session")
def tiny_comparator() -> ComparisonModel:
    """A tiny comparator with ImageNet cells and a random head (a correction that is not
    0), shared by the evaluation scorer's and the research readouts' tests."""
    torch.manual_seed(0)
    net = ComparisonModel(ComparatorConfig(input_size=64, dim=16, depth=1, heads=2, top_k=2))
    net.features.load_imagenet()
    torch.nn.init.normal_(net.comparator.head.weight, std=0.5)
    return net.eval()
