"""Shared fixtures: a tiny random-weight checkpoint and one small rendered product.

Random weights are enough here: these tests pin the mechanics of profiles (selection,
caching, checksums, thresholds), not detection quality, which belongs to training/eval.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.synth import ViewCounts, render_dataset

VIEWS = ViewCounts(train=24, test_per_defect=4, test_good=40)
FAST = DetectionSettings(metric="auto", passes=3, device="cpu")


@pytest.fixture(scope="session")
def product(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in duck at 64 px: 24 training views, 40 good and 12 defective test views."""
    out = tmp_path_factory.mktemp("profiles_synth") / "data"
    return render_dataset(["builtin:duck"], out, VIEWS, size=64, seed=0) / "duck"


def write_checkpoint(path: Path, seed: int) -> Path:
    torch.manual_seed(seed)
    save_checkpoint(path, build_model("tiny"), {"note": "random weights, for tests"})
    return path


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    """A fresh copy per test, so a test may overwrite it."""
    return write_checkpoint(tmp_path / "tiny.safetensors", seed=0)


def camera_directions(dataset: Path) -> dict[str, np.ndarray]:
    """Unit vectors from the object to each camera, keyed like ``train/good/3``."""
    frames = json.loads((dataset / "transforms.json").read_text())["frames"]
    out = {}
    for frame in frames:
        position = np.asarray(frame["transform_matrix"], dtype=np.float64)[:3, 3]
        out[frame["file_path"]] = position / np.linalg.norm(position)
    return out
