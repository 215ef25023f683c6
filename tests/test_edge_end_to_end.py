"""An edge checkpoint, trained by the trainer, through detect, profile and eval as a user
runs them (subprocesses on a tiny render)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from padformer_edge_training.config import TrainConfig
from padformer_edge_training.synth import ViewCounts, render_dataset
from padformer_edge_training.trainer import run_training
from tests.cli_process import run_cli
from tests.training.test_train_edge import TINY_EDGE


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("edge") / "synth"
    counts = ViewCounts(train=14, test_per_defect=1, test_good=2)
    return render_dataset(["builtin:duck"], out, counts, 64)


DESIGNS = {
    "paper decoder": {},
    "reference-reading decoder": {
        "isolate_masked": True,
        "mask_shape": "blocks",
        "mask_ratio": 0.75,
        "mask_block": 2,
        "score_masked_cells": True,
    },
    "reference-pointer readout": {"feature_readout": "references", "score_masked_cells": True},
}


@pytest.fixture(scope="module", params=list(DESIGNS))
def checkpoint(
    request: pytest.FixtureRequest, rendered: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    config = TrainConfig.model_validate(
        {
            "model": {"preset": "edge", "overrides": {**TINY_EDGE, **DESIGNS[request.param]}},
            "data": {"num_refs": 2, "num_workers": 0},
            "loss": {"perceptual": "none"},
            "optim": {"batch_size": 4, "warmup_steps": 1},
            "stages": {"within_view": {"epochs": 1}, "cross_view": {"epochs": 1}},
        }
    )
    return run_training(config, rendered, tmp_path_factory.mktemp("run")).checkpoint


def test_detect_scores_with_the_fused_metric(rendered: Path, checkpoint: Path, tmp_path: Path):
    query = rendered / "duck" / "test" / "Stains" / "0.png"
    result = run_cli(
        "detect", "--model", str(checkpoint), "--references",
        str(rendered / "duck" / "train" / "good"), "--passes", "3", "--device", "cpu",
        "--out", str(tmp_path / "maps"), "--json", str(query),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert row["score"] > 0


def test_profile_create_and_calibrate(rendered: Path, checkpoint: Path, tmp_path: Path):
    # 14 good views: 3 become references, the 11 others are enough to calibrate on
    root = ["--root", str(tmp_path / "profiles")]
    created = run_cli(
        "profile", "create", "duck", "--model", str(checkpoint), "--references",
        str(rendered / "duck" / "train" / "good"), "--shots", "3", "--passes", "3",
        "--device", "cpu", *root,
    )  # fmt: skip
    assert created.returncode == 0, created.stderr
    calibrated = run_cli(
        "profile", "calibrate", "duck", "--good", str(rendered / "duck" / "train" / "good"),
        "--target-fpr", "0.25", *root,
    )  # fmt: skip
    assert calibrated.returncode == 0, calibrated.stderr
    assert "threshold" in calibrated.stdout


def test_eval_reports_the_fused_metric(rendered: Path, checkpoint: Path, tmp_path: Path):
    out = tmp_path / "eval"
    result = run_cli(
        "eval", "--model", str(checkpoint), "--data", str(rendered), "--shots", "2",
        "--passes", "3", "--out", str(out),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["mean"]["images"] == 5
    assert 0.0 <= metrics["mean"]["image_auroc"] <= 1.0
