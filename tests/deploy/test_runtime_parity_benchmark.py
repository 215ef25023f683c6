"""``benchmarks/runtime_parity.py`` on a tiny render and a tiny edge model: one row per
runtime and class, each within the parity targets, and one JSON line."""

import json

from padformer_edge.model.checkpoint import save_checkpoint
from tests.benchmark_process import run_benchmark
from tests.deploy.parity import tiny_model


def test_every_runtime_meets_the_parity_targets_on_a_render(tmp_path):
    from padformer_edge_training.synth import ViewCounts, render_dataset

    counts = ViewCounts(train=3, test_per_defect=1, test_good=11)
    data = render_dataset(["builtin:lego"], tmp_path / "render", counts, size=64, seed=0)
    save_checkpoint(tmp_path / "edge.safetensors", tiny_model("edge"))
    result = run_benchmark(
        "runtime_parity.py", "--model", str(tmp_path / "edge.safetensors"),
        "--data", str(data), "--shots", "2", "--max-per-label", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["benchmark"] == "runtime_parity"
    rows = record["rows"]
    assert [r["runtime"] for r in rows] == ["torch", "onnxruntime", "openvino"]
    assert {r["images"] for r in rows} == {4}  # one good view and one per defect kind
    assert all(r["max_score_rel_diff"] <= 1e-4 for r in rows)
    assert all(r["max_map_rel_diff"] <= r["map_bound"] for r in rows)
    assert all(r["verdicts_same"] == r["images"] for r in rows)
    assert all(r["auroc_diff_points"] <= 0.1 for r in rows)
    assert record["passed"] is True
    assert "| openvino |" in result.stdout
