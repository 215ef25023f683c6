"""``benchmarks/thumbnails.py`` runs end to end with a small image: it stores one
inspection, starts ``padformer-edge serve`` as a process, asks for the full image and
the thumbnail and reports both. A smoke test of the tool, not a timing: no CPU figure
is checked, only that each request was made and what came back."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cli_process import REPO


def test_the_thumbnail_benchmark_runs_and_reports_both_images() -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "thumbnails.py"), "--width", "800",
         "--height", "600", "--repeats", "3", "--full-repeats", "1"],
        capture_output=True, text=True, timeout=300, cwd=REPO, check=False,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["benchmark"] == "thumbnails" and report["repeats"] == 3
    assert 0 < report["thumb_bytes"] < report["full_bytes"]
    assert report["cached_cpu_ms"] >= 0 and report["first_cpu_ms"] >= 0
    assert report["full_cached_cpu_ms"] >= 0 and report["full_repeats"] == 1
    assert "| thumbnail, cached (every later card) | 3 | image/jpeg |" in result.stdout
    assert "| full image, cached (the page opened again) | 1 | image/png |" in result.stdout
    assert "800 x 600 TIF" in result.stdout and "Targets:" in result.stdout
