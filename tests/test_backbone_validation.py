"""benchmarks/backbone_validation.py: PatchCore on each backbone, validation render only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.backbone_validation import configurations
from padformer_edge.errors import UserError
from tests.test_benchmark_tools import _benchmark
from training.synth import ViewCounts, render_dataset

COUNTS = ViewCounts(train=6, test_per_defect=1, test_good=1)


def test_one_configuration_per_backbone_lite0_first_whatever_word_it_had():
    both = ["efficientnet-lite2", "efficientnet-lite0"]
    assert configurations("2@448 turned lite2", both) == ["2@448 turned", "2@448 turned lite2"]
    assert configurations("2+3@224", ["efficientnet-lite2"]) == ["2+3@224 lite2"]
    with pytest.raises(UserError, match="unknown --backbone efficientnet-lite9"):
        configurations("2@224", ["efficientnet-lite9"])


def test_it_scores_both_backbones_on_the_validation_render_and_refuses_another(
    tmp_path: Path,
) -> None:
    validation = render_dataset(["builtin:duck"], tmp_path / "val", COUNTS, 64, seed=1)
    done = _benchmark(
        "backbone_validation.py", "--data", str(validation), "--config", "2@64",
        "--max-per-label", "1",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout.strip().splitlines()[-1])
    assert payload["benchmark"] == "backbone_validation" and payload["render_seed"] == 1
    assert list(payload["methods"]) == ["PatchCore 2@64", "PatchCore 2@64 lite2"]
    for row in payload["methods"].values():
        assert row["images"] == payload["images"] == 4  # good + three defect kinds, 1 each
        assert row["cpu_s_per_image"] > 0
    assert list(payload["margins_over_first"]) == ["PatchCore 2@64 lite2"]
    assert "| PatchCore 2@64 lite2 |" in done.stdout

    test = render_dataset(["builtin:duck"], tmp_path / "test", COUNTS, 64, seed=0)
    refused = _benchmark("backbone_validation.py", "--data", str(test), "--config", "2@64")
    assert refused.returncode != 0
    assert "not the validation render" in refused.stderr
