"""``benchmarks/soak.py`` on the tiny random-weight profile for a handful of images: the
real daemon, every image one ``done`` row, memory sampled, one JSON line per runtime."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import run_benchmark


def test_every_image_gets_one_done_row_and_memory_is_sampled():
    result = run_benchmark(
        "soak.py", "--tiny", "--images", "8", "--rate", "8", "--warmup-images", "2",
        "--sample-s", "0.3", timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(result.stdout.strip().splitlines()[-1])
    assert record["benchmark"] == "soak"
    (run,) = record["runtimes"]
    assert run["runtime"] == "torch" and run["images"] == 8
    assert (run["lost"], run["duplicated"], run["not_done"]) == (0, 0, 0)
    # The peak covers every sample, and RSS was read from the live daemon.
    assert run["peak_rss_mib"] >= run["rss_end_mib"] > 50
    assert run["samples_after_warmup"] >= 1 and run["cpu_s_per_image"] > 0
    assert "| torch | 8 |" in result.stdout


def test_profile_without_images_is_refused_in_one_sentence(tmp_path: Path):
    result = run_benchmark(
        "soak.py", "--profile", str(tmp_path), "--images", "4", "--warmup-images", "1"
    )
    assert result.returncode != 0
    assert "--profile needs --images-dir" in result.stderr
