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
    big, none = line["shifts"]["+4 sd"], line["shifts"]["+0 sd"]
    assert big["streams"] == 40 and big["within"] == 1.0 and big["median"] <= 2 * 50
    assert none["undetected"] >= 35  # an unshifted "shift" is almost never flagged
    assert "| unshifted images |" in done.stdout and "alert within 200 images" in done.stdout


def test_the_rendered_mode_reads_real_scores_and_reports_the_shift(tmp_path) -> None:
    """The same file layout ``benchmarks/drift_scores.py`` writes, with scores made here:
    a large paired shift is caught, and the reported shift is the one put in."""
    import numpy as np

    rng = np.random.default_rng(0)
    good = rng.normal(50.0, 2.0, 200)
    scores = tmp_path / "scores.json"
    scores.write_text(json.dumps({
        "render": "data/r", "class": "duck", "model_sha256": "ab" * 32, "references": 4,
        "brightness": 0.2, "views": [f"v{i}" for i in range(200)], "good": good.tolist(),
        "shifted": (good + 8.0).tolist(), "cpu_s": 1.0,
    }))  # fmt: skip
    done = run_benchmark("drift.py", "--scores", str(scores), "--shifted-streams", "20",
                         "--window", "50", "--max-images", "300")  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["benchmark"] == "drift-rendered" and line["views"] == 200
    assert line["calibration"] == 100
    assert abs(line["moved_sd"] - 8.0 / good.std(ddof=1)) < 1e-9
    shifted = line["streams"]["as rendered, then +20% brightness"]
    assert shifted["within"] == 1.0 and shifted["median"] <= 100
    assert "+20% brightness" in done.stdout and "control" in done.stdout


def test_the_image_mode_measures_real_images_and_catches_a_lamp_change(tmp_path) -> None:
    """``drift_scores.py --statistics-only`` on a render-shaped folder of OpenCV-drawn
    poses (no model), then ``drift.py --statistics``: the statistics move by the change
    put in, a 20 % brighter or darker lamp is caught within two windows on every stream,
    the daemon's monitor alerts where the batched tests do, and the counts add up."""
    from tests.daemon.harness import write_image
    from tests.detect_images import posed_part

    render = tmp_path / "render"
    for i in range(160):
        folder = render / "part" / ("train" if i < 140 else "test") / "good"
        write_image(folder / f"{i:03d}.png", posed_part(seed=i))
    out = tmp_path / "statistics.json"
    made = run_benchmark("drift_scores.py", "--render", str(render), "--class", "part",
                         "--brightness", "0.2", "--brightness", "-0.2", "--statistics-only",
                         "--out", str(out))  # fmt: skip
    assert made.returncode == 0, made.stderr
    data = json.loads(out.read_text())
    assert data["images"] == 3 * 160 and list(data["classes"]["part"]["statistics"]) == [
        "as rendered", "+20%", "-20%"]  # fmt: skip
    done = run_benchmark("drift.py", "--statistics", str(out), "--window", "50",
                         "--calibration", "60", "--stream-views", "100", "--splits", "200",
                         "--shifted-streams", "30", "--monitor-streams", "5",
                         "--profiles", "5")  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = json.loads(done.stdout.strip().splitlines()[-1])
    assert line["benchmark"] == "drift-images" and line["monitor_agrees"] is True
    part = line["classes"]["part"]
    assert (part["views"], part["calibration"], part["stream_views"]) == (160, 60, 100)
    assert part["windows"] == 200 * 2 and line["unshifted_images"] == 200 * 2 * 50
    assert part["false_alerts"] <= part["false_image"] + part["false_score"]
    assert line["level"] == 1e-4 * 50 / 5
    for change in ("+20%", "-20%"):
        found = part["streams"][f"as rendered, then {change} brightness"]
        assert found["within"] == 1.0 and found["p95"] <= 2 * 50
    assert part["streams"]["as rendered throughout (control)"]["undetected"] >= 25
    assert "| part | +20% brightness | +" in done.stdout
