"""research/backbone_validation.py: PatchCore on each backbone, validation render only."""

from __future__ import annotations

import json
from pathlib import Path

from padformer_edge_training.synth import ViewCounts, render_dataset
from tests.benchmark_process import run_research

COUNTS = ViewCounts(train=6, test_per_defect=1, test_good=1)


def test_it_scores_both_backbones_on_the_validation_render_and_refuses_another(
    tmp_path: Path,
) -> None:
    validation = render_dataset(["builtin:duck"], tmp_path / "val", COUNTS, 64, seed=1)
    # the configuration's own backbone word is replaced, Lite0 scored first whatever the order
    done = run_research(
        "backbone_validation.py", "--data", str(validation), "--config", "2@64 lite2",
        "--backbone", "efficientnet-lite2", "--backbone", "efficientnet-lite0",
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

    unknown = run_research(
        "backbone_validation.py", "--data", str(validation), "--config", "2@64",
        "--backbone", "efficientnet-lite9",
    )  # fmt: skip
    assert unknown.returncode != 0
    assert "unknown --backbone efficientnet-lite9" in unknown.stderr

    test = render_dataset(["builtin:duck"], tmp_path / "test", COUNTS, 64, seed=0)
    refused = run_research("backbone_validation.py", "--data", str(test), "--config", "2@64")
    assert refused.returncode != 0
    assert "not the validation render" in refused.stderr
