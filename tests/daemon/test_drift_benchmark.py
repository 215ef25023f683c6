"""``benchmarks/drift.py`` as the docs run it, small: its batched tests alert where the
daemon's monitor does, a large shift is caught within two windows, none is on a stream
too short to fill one, and the JSON line adds up."""

from __future__ import annotations

import json

from tests.benchmark_process import run_benchmark


def test_the_drift_benchmark_agrees_with_the_monitor_and_catches_a_large_shift() -> None:
    done = run_benchmark("drift.py", "--profiles", "4", "--unshifted-images", "2000",
                         "--shift", "4", "--shift", "0", "--shifted-streams", "40",
                         "--window", "50", "--max-images", "200")  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["benchmark"] == "drift" and line["monitor_agrees"] is True
    assert line["unshifted_images"] == 4 * 2000 and line["window"] == 50
    assert line["false_alerts"] <= line["false_ks"] + line["false_binomial"]
    big, none = line["shifts"]["4"], line["shifts"]["0"]
    assert big["streams"] == 40 and big["within"] == 1.0 and big["median"] <= 2 * 50
    assert none["undetected"] >= 35  # an unshifted "shift" is almost never flagged
    assert "| unshifted images |" in done.stdout and "alert within 200 images" in done.stdout
