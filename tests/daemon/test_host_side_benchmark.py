"""``benchmarks/daemon_throughput.py --stored-maps``: the real daemon with a detector that
returns stored real detections, on the 224-px set at its smallest, profiled."""

from __future__ import annotations

import json
from pathlib import Path

from tests.benchmark_process import run_benchmark


def test_the_stored_map_daemon_measures_and_profiles_the_host_side(tmp_path: Path) -> None:
    out = tmp_path / "host.json"
    done = run_benchmark(
        "daemon_throughput.py", "--stored-maps", "--sets", "224-png", "--images", "20",
        "--preset", "tiny", "--passes", "2", "--metric", "rgb", "--profile",
        "--profile-dir", str(tmp_path / "prof"), "--json-out", str(out),
        "--worker", "host_threads=3,heatmap_format=png-stored", timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (run,) = json.loads(out.read_text())["sets"]
    assert run["set"] == "224 px PNG" and run["images"] == 20 and run["arrival"] == "write"
    assert run["worker"] == "host_threads=3, heatmap_format=png-stored"
    assert run["heatmap_kib"] > 0
    assert run["latency_p95_ms"] >= run["latency_p50_ms"] > 0
    assert run["anomaly_share"] == 2 / 20  # one of the ten distinct images, cycled twice
    assert run["detect_ms_max"] == 0.0  # every row answered by the stored detections
    assert run["cpu_ms_per_image"] > 0 and run["images_per_s"] > 0
    shares = run["stage_share"]
    assert shares.pop("find the part") == 0  # a framed profile's stage: none here
    assert all(share > 0 for share in shares.values()), shares  # every other stage found
    assert sum(shares.values()) <= 1.0
    assert (tmp_path / "prof" / "png-224.prof").stat().st_size > 0
    assert "| 224 px PNG (224x224) | 20 |" in done.stdout
    assert "| host_threads=3, heatmap_format=png-stored |" in done.stdout


def test_camera_frames_are_located_by_the_framed_profile(tmp_path: Path) -> None:
    """The framed set: its profile made with the belt photo finds the part in every frame
    (its detection time is the locating's, the crop's scoring stored), one alert in ten."""
    out = tmp_path / "framed.json"
    done = run_benchmark(
        "daemon_throughput.py", "--stored-maps", "--sets", "5mp-framed", "--camera-images",
        "10", "--preset", "tiny", "--passes", "2", "--metric", "rgb", "--json-out", str(out),
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    (run,) = json.loads(out.read_text())["sets"]
    assert run["set"] == "5 MP JPEG frame, part located" and run["framed"]
    assert (run["width"], run["height"], run["images"]) == (2448, 2048, 10)
    assert run["anomaly_share"] == 1 / 10
    assert run["detect_ms_max"] > 0  # the part found in each frame, at a cost
    assert "The framed set: 2448x2048 frames" in done.stdout


def test_a_worker_setting_without_a_value_is_refused_in_one_sentence() -> None:
    done = run_benchmark("daemon_throughput.py", "--stored-maps", "--worker", "host_threads")
    assert done.returncode != 0
    assert "--worker host_threads: write KEY=VALUE pairs separated by commas." in done.stderr


def test_an_unknown_image_set_is_refused_in_one_sentence() -> None:
    done = run_benchmark("daemon_throughput.py", "--stored-maps", "--sets", "4k-tiff")
    assert done.returncode != 0
    assert "--sets: 4k-tiff unknown" in done.stderr


def test_an_unknown_arrival_is_refused_in_one_sentence() -> None:
    done = run_benchmark("daemon_throughput.py", "--stored-maps", "--arrivals", "ftp")
    assert done.returncode != 0
    assert "--arrivals: ftp unknown; choose of write, rename." in done.stderr
