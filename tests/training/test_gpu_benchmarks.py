"""The GPU benchmarks' refusals. Their CPU paths at tiny sizes, and that a dry run never
becomes a docs table, are checked where the one prepared GPU call runs them
(``tests/training/test_gpu_session.py``): one run of each script serves both."""

from __future__ import annotations

import json
from pathlib import Path

from padformer_edge.detect.parity import PARITY_RTOL
from tests.benchmark_process import run_benchmark


def test_the_random_table_takes_one_reference_count() -> None:
    done = run_benchmark("gpu_detect_speed.py", "--device", "cpu", "--references", "4,12")
    assert done.returncode != 0 and "takes one --references count" in done.stderr


def _shipped_run(rows: list[dict]) -> dict:
    """A saved shipped-model grid as ``gpu_detect_speed.py --json-out`` writes it."""
    return {
        "device": "NVIDIA H200", "torch": "2.11.0", "passes": 15, "repeats": 3,
        "model": "shipped", "size": 224, "views": 64, "parity_images": 8,
        "model_batch": 1024, "partial": False, "rows": rows,
    }  # fmt: skip


def _row(metric: str, precision: str, gap: float) -> dict:
    return {
        "references": 12, "metric": metric, "precision": precision, "per_call": 8,
        "ms_per_image": 2.0, "images_per_s": 500.0, "parity_gap": gap,
        "within_parity": gap <= PARITY_RTOL, "verdicts_agree": True,
    }  # fmt: skip


def test_an_fp32_row_outside_the_parity_bound_fails_the_run_by_name(tmp_path: Path) -> None:
    """fp32 on CUDA must be the CPU's float32 within PARITY_RTOL: a saved grid with one
    fp32 row outside it exits non-zero naming that row (and only that row: TF32 and bf16
    may trade the bound for speed), after printing the table as usual."""
    saved = tmp_path / "grid.json"
    saved.write_text(json.dumps(_shipped_run([
        _row("distance", "fp32", PARITY_RTOL / 2),
        _row("compare", "fp32", PARITY_RTOL * 2),
        _row("compare", "tf32", PARITY_RTOL * 40),
    ])))  # fmt: skip
    done = run_benchmark("gpu_detect_speed.py", "--from-json", str(saved))
    assert done.returncode != 0
    assert "images per call" in done.stdout  # the table is still rendered
    named = [line for line in done.stderr.splitlines() if "outside the parity bound" in line]
    assert any("metric compare" in line and "fp32 row" in line for line in named), done.stderr
    assert not any("distance" in line for line in named)
    assert "1 fp32 row(s)" in done.stderr


def test_a_grid_whose_fp32_rows_hold_the_bound_passes(tmp_path: Path) -> None:
    saved = tmp_path / "grid.json"
    saved.write_text(json.dumps(_shipped_run([
        _row("compare", "fp32", PARITY_RTOL),  # on the bound is within it
        _row("compare", "bf16", PARITY_RTOL * 40),
    ])))  # fmt: skip
    done = run_benchmark("gpu_detect_speed.py", "--from-json", str(saved))
    assert done.returncode == 0, done.stderr
    assert "outside the parity bound" not in done.stderr
