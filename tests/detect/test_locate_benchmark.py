"""``benchmarks/locate.py``: choices only on the validation seed, ``--test`` only on a test
seed and only with the shipped locator, its summary counted from the frames it measured."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import run_benchmark

TINY = ["--classes", "1", "--frame", "320x256", "--belt", "belt", "--good", "1",
        "--references", "1", "--empty", "3"]  # fmt: skip


def test_a_choice_on_a_test_seed_and_a_test_on_the_validation_seed_are_refused(tmp_path):
    for args in (["--seed", "2"], ["--test", "--seed", "1"]):
        done = run_benchmark("locate.py", "--renders", str(tmp_path), *args, *TINY)
        assert done.returncode != 0 and "choices are made on validation" in done.stderr
        assert "Traceback" not in done.stderr
    assert not any(tmp_path.iterdir())  # refused before anything was rendered


def test_the_test_run_measures_the_shipped_locator_on_a_test_render(tmp_path: Path):
    done = run_benchmark("locate.py", "--test", "--seed", "2", "--renders", str(tmp_path), *TINY)
    assert done.returncode == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("{"))
    record = json.loads(line)
    (result,) = record["results"]
    assert record["benchmark"] == "locate-test"
    assert record["seed"] == 2 and result["candidate"] == "colour / photo"
    assert result["frames"] == 6 and result["empty_frames"] == 3  # 1 good + 5 kinds; 3 empty
    found = round(result["iou_rate"] * result["frames"])
    assert f"in {found} of 6 framed frames" in done.stdout
    assert "Test render: 1 procedural objects of seed 2" in done.stdout
