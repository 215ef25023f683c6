"""A tiny rendered dataset and a tiny random-weight checkpoint, shared by the eval tests."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

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
