"""The GPU benchmarks' CPU paths at tiny sizes: what the one prepared GPU call runs must
work before a GPU is lent, and a dry run must never become a docs table."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import run_benchmark

TINY_SHIPPED = (
    "--model", "shipped", "--device", "cpu", "--references", "2", "--metric",
    "distance,compare", "--per-call", "1,2", "--passes", "2", "--repeats", "1", "--views",
    "3", "--parity-images", "2", "--size", "64",
)  # fmt: skip


def test_the_shipped_grid_runs_on_the_cpu_and_a_dry_run_writes_no_docs(tmp_path: Path) -> None:
    saved = tmp_path / "shipped.json"
    done = run_benchmark("gpu_detect_speed.py", *TINY_SHIPPED, "--json-out", str(saved))
    assert done.returncode == 0, done.stderr[-3000:]
    payload = json.loads(saved.read_text())
    rows = payload["rows"]
    assert payload["device"] == "CPU (dry run)" and payload["model"] == "shipped"
    assert payload["partial"] is False  # rows are saved as they come, then marked whole
    assert [(r["metric"], r["per_call"]) for r in rows] == [
        ("distance", 1), ("distance", 2), ("compare", 1), ("compare", 2)
    ]  # fmt: skip
    assert {r["precision"] for r in rows} == {"fp32"}  # no TF32 or bf16 on a CPU
    # the CPU against itself: the same code on the same images in one call, so the
    # same bits; a gap here would be a bug in the check, not rounding
    assert all(r["parity_gap"] == 0.0 and r["verdicts_agree"] for r in rows)
    assert all(r["images_per_s"] > 0 for r in rows)
    assert "| 2 | compare | fp32 | 2 |" in done.stdout

    again = run_benchmark("gpu_detect_speed.py", "--from-json", str(saved), "--write-docs")
    assert again.returncode != 0 and "dry run is no GPU measurement" in again.stderr


def test_the_random_table_takes_one_reference_count() -> None:
    done = run_benchmark("gpu_detect_speed.py", "--device", "cpu", "--references", "4,12")
    assert done.returncode != 0 and "takes one --references count" in done.stderr


def test_the_daemon_run_with_the_shipped_model_at_a_steady_rate(tmp_path: Path) -> None:
    saved = tmp_path / "daemon.json"
    done = run_benchmark(
        "daemon_throughput.py", "--model", "shipped", "--device", "cpu", "--metric",
        "distance", "--references", "2", "--views", "3", "--images", "4", "--cameras", "2",
        "--passes", "2", "--batch", "2", "--burst-max-batch", "4", "--size", "64", "--rate",
        "4", "--json-out", str(saved),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    run = json.loads(saved.read_text())
    assert (run["model"], run["device"], run["images"], run["rate"]) == ("shipped", "cpu", 4, 4.0)
    # counted complete comes after the file was closed: its latency is the shorter
    assert 0 < run["counted_p50_s"] <= run["latency_p50_s"]
    assert run["counted_p95_s"] <= run["latency_p95_s"]
    assert run["gpu_reserved_bytes"] is None  # the CPU: /metrics shows no GPU
    assert "| steady 4/s | 4 |" in done.stdout
    refused = run_benchmark("daemon_throughput.py", "--from-json", str(saved), "--write-docs")
    assert refused.returncode != 0 and "renders GPU runs" in refused.stderr
