"""``benchmarks/detect_speed.py --runtimes`` on a tiny setting: every row, one JSON line."""

import json

from padformer_edge.devices.runtimes import RUNTIMES
from tests.benchmark_process import run_benchmark


def test_runtime_rows_cover_each_runtime_thread_and_reference_count():
    result = run_benchmark(
        "detect_speed.py", "--preset", "tiny", "--runtimes", "--passes", "2", "--repeats", "1",
        "--thread-counts", "1,2", "--reference-counts", "1,3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["benchmark"] == "detect_speed_runtimes"
    seen = {(r["runtime"], r["threads"], r["references"]) for r in record["rows"]}
    assert seen == {
        (runtime, threads, refs)
        for runtime in (*RUNTIMES, "line: onnxruntime", "line: openvino")
        for threads in (1, 2)
        for refs in (1, 3)
    }
    assert all(r["score_gap"] <= 1e-4 and r["cpu_s"] > 0 for r in record["rows"])
    assert all(r["passes_cpu_s"] > 0 for r in record["rows"])
    assert "| onnxruntime | 2 | 3 |" in result.stdout
    assert "| openvino | 2 | 3 |" in result.stdout
    assert "| line: openvino | 2 | 3 |" in result.stdout  # what a torch-free line runs


def test_graph_profile_has_operator_totals_per_runtime_and_reference_count():
    result = run_benchmark(
        "detect_speed.py", "--preset", "tiny", "--profile-graphs", "--passes", "2",
        "--thread-counts", "1", "--reference-counts", "1,3", "--profile-top", "3",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["benchmark"] == "detect_speed_graph_profile"
    seen = {(r["runtime"], r["references"]) for r in record["rows"]}
    assert seen == {(runtime, refs) for runtime in ("onnxruntime", "openvino") for refs in (1, 3)}
    for row in record["rows"]:
        assert sum(row["ms_by_op"].values()) > 0
        # the query graph's decoder runs its matrix products and the top-k selection
        assert "TopK" in row["ms_by_op"]
    assert result.stdout.count("(all other types)") == 4
