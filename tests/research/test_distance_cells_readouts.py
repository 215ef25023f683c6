"""``research/distance_cells.py --readout`` (stage C of the small-defect work): a trained
comparator's rows read several ways, over one render or the mean of several."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from padformer_edge.methods.compare.checkpoint import save_comparator
from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from tests.benchmark_process import run_research


@pytest.fixture(scope="module")
def model() -> ComparisonModel:
    """A tiny comparator with a correction that is not 0."""
    torch.manual_seed(0)
    net = ComparisonModel(ComparatorConfig(input_size=64, dim=16, depth=1, heads=2, top_k=2))
    net.features.load_imagenet()
    torch.nn.init.normal_(net.comparator.head.weight, std=0.5)
    return net.eval()


def test_the_benchmark_reads_rows_several_ways_and_averages_renders(
    model, tiny_data: Path, tmp_path: Path
) -> None:
    save_comparator(tmp_path / "tiny.safetensors", model, {"step": 0})
    other = tmp_path / "second-render"
    shutil.copytree(tiny_data, other)
    args = ["--shots", "2", "--max-per-label", "1", "--cache", str(tmp_path / "c.json")]
    args += ["--model", str(tmp_path / "tiny.safetensors"), "--readout", "s2", "--readout", "top2"]
    done = run_research("distance_cells.py", "--data", str(tiny_data), *args)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])["rows"]
    name = f"comparator {tmp_path.name}/tiny"
    assert set(rows) == {name, f"{name} [top2]"}
    both = run_research("distance_cells.py", "--data", str(tiny_data), "--data", str(other), *args)
    assert both.returncode == 0, both.stderr[-2000:]
    line = json.loads(both.stdout.strip().splitlines()[-1])
    assert line["data"] == [tiny_data.name, other.name] and "| per render |" in both.stdout
    # the same images twice: the mean of two equal renders is each one's figure
    assert line["rows"][name]["image_auroc"] == pytest.approx(rows[name]["image_auroc"])
    assert "the mean over 2 renders" in both.stdout
    # margins against a row named by the start of its label; a name no row has is refused
    barred = run_research("distance_cells.py", "--data", str(tiny_data), *args, "--bar", name)
    assert barred.returncode == 0 and f"| margin over {name} |" in barred.stdout
    refused = run_research("distance_cells.py", "--data", str(tiny_data), *args, "--bar", "x")
    assert refused.returncode != 0 and "--bar 'x' starts no row's label" in refused.stderr
