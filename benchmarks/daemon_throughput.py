"""Daemon throughput: a burst of images into camera folders, against the Detector alone.

The daemon runs as the real subprocess (`padformer-edge watch`) on a fresh SQLite file;
the benchmark writes a burst of PNG files, round-robin over the camera folders, as
cameras would, and waits until every row is done. It reports

- end-to-end images/s (first file closed -> last row committed) and the p50/p95 latency
  from each file's close to its row's commit (``finished_at``);
- the same images through ``Detector.detect`` alone, in batches of the worker's size, in
  this process with the same thread count;
- the daemon's overhead as a ratio measured in the same run: wall time per image, and
  CPU seconds per image (the daemon's from /proc, the Detector's from process_time).
  On a shared machine other jobs stretch wall time but hardly CPU time, so the CPU ratio
  is the one to compare with the target (overhead <= 15%);
- the daemon's resident memory once a quarter of the images are done and at the end, as
  growth per 1000 images: what a leak would show first on a line PC that runs for months
  (run with a few hundred ``--images`` for that).

Weights are random (detection cost does not depend on them); the profile is made with
the profiles API. Example:

    python benchmarks/daemon_throughput.py --preset small --images 48 --write-docs
"""

from __future__ import annotations

import argparse
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import cv2
import numpy as np
import torch
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, smooth_photo, update_docs_section
from benchmarks.process_stats import cpu_seconds, rss_mib
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile

REPO = Path(__file__).resolve().parent.parent


def png(image: np.ndarray) -> bytes:
    return cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))[1].tobytes()


def make_profile(root: Path, preset: str, passes: int, size: int) -> None:
    """A random-weight profile with an explicit threshold no score reaches (no alerts)."""
    torch.manual_seed(0)
    source = root / "sources"
    save_checkpoint(source / "model.safetensors", build_model(preset))
    for seed in range(4):
        (source / "references").mkdir(parents=True, exist_ok=True)
        (source / "references" / f"{seed}.png").write_bytes(png(smooth_photo(size, seed, cells=6)))
    settings = DetectionSettings(passes=passes, device="cpu", max_batch=passes)
    profile = create_profile(
        root / "profiles",
        "bench",
        source / "model.safetensors",
        source / "references",
        settings=settings,
    ).profile
    pin_threshold(profile, float("1e30"))


def wait_log(log: Path, event: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"daemon exited:\n{log.read_text()[-3000:]}")
        if f'"event": "{event}"' in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise SystemExit(f"daemon did not log {event} within {timeout}s")


def done_rows(database: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(
            "SELECT source_path, status, finished_at FROM inspections "
            "WHERE status NOT IN ('pending', 'processing')"
        ).fetchall()
    finally:
        conn.close()


def run_daemon(work: Path, payloads: list[bytes], cameras: int, batch: int, threads: int):
    """(wall s, CPU s, latencies s, resident MiB once a quarter of the images are done
    and at the end) of the daemon inspecting ``payloads``."""
    folders = [work / "cameras" / f"cam{i}" for i in range(cameras)]
    for folder in folders:
        folder.mkdir(parents=True)
    database = work / "results.sqlite3"
    config = {
        "database": str(database),
        "profiles_dir": str(work / "profiles"),
        "heatmaps": str(work / "heatmaps"),
        "cameras": [{"name": f.name, "path": str(f), "profile": "bench"} for f in folders],
        "intake": {"stable_ms": 100},
        "worker": {"max_batch": batch, "max_wait_ms": 100, "device": "cpu"},
    }
    (work / "daemon.yaml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "PYTHONPATH": str(REPO),
        "PADFORMER_EDGE_STATE_DIR": str(work),
    }
    env.pop("NOTIFY_SOCKET", None)
    log = work / "daemon.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "padformer_edge",
                "--log-format",
                "json",
                "watch",
                "--config",
                str(work / "daemon.yaml"),
            ],
            cwd=REPO,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_log(log, "daemon.ready", process, 600)
        cpu_before = cpu_seconds(process.pid)
        closed: dict[str, float] = {}
        for index, data in enumerate(payloads):
            path = folders[index % cameras] / f"{index:05d}.png"
            path.write_bytes(data)
            closed[str(path)] = time.time()
        warm_rss = None
        while len(rows := done_rows(database)) < len(payloads):
            if process.poll() is not None:
                raise SystemExit(f"daemon exited:\n{log.read_text()[-3000:]}")
            if warm_rss is None and len(rows) >= len(payloads) // 4:
                warm_rss = rss_mib(process.pid)
            time.sleep(0.05)
        cpu = cpu_seconds(process.pid) - cpu_before
        end_rss = rss_mib(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    if {status for _, status, _ in rows} != {"done"}:
        raise SystemExit(f"not every row is done: {rows[:5]}")
    finished = {path: datetime.fromisoformat(at + "+00:00").timestamp() for path, _, at in rows}
    latencies = [finished[path] - closed[path] for path in closed]
    wall = max(finished.values()) - min(closed.values())
    return wall, cpu, latencies, (warm_rss or end_rss, end_rss)


def run_detector(work: Path, images: list[np.ndarray], batch: int) -> tuple[float, float]:
    """(wall s, CPU s) of ``Detector.detect`` alone over ``images`` in worker-sized batches."""
    detector = load_profile(work / "profiles", "bench").build_detector("cpu")
    detector.detect(images[:1])  # the daemon warms up too
    wall, cpu = time.perf_counter(), time.process_time()
    for start in range(0, len(images), batch):
        detector.detect(images[start : start + batch])
    return time.perf_counter() - wall, time.process_time() - cpu


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="small")
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--images", type=int, default=48)
    parser.add_argument("--cameras", type=int, default=3)
    parser.add_argument("--size", type=int, default=256, help="camera image side in pixels")
    parser.add_argument("--batch", type=int, default=4, help="the worker's max_batch")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory(prefix="daemon-bench-") as tmp:
        work = Path(tmp)
        make_profile(work, args.preset, args.passes, args.size)
        images = [smooth_photo(args.size, 1000 + i, cells=6) for i in range(args.images)]
        payloads = [png(image) for image in images]
        daemon_wall, daemon_cpu, latencies, (warm_rss, end_rss) = run_daemon(
            work, payloads, args.cameras, args.batch, args.threads
        )
        detector_wall, detector_cpu = run_detector(work, images, args.batch)

    n = args.images
    wall_overhead = daemon_wall / detector_wall - 1
    cpu_overhead = daemon_cpu / detector_cpu - 1
    growth = (end_rss - warm_rss) / (n - n // 4) * 1000
    table = markdown_table(
        ["path", "images/s (wall)", "CPU s per image", "p50 latency s", "p95 latency s"],
        [
            ["Detector.detect alone", n / detector_wall, detector_cpu / n, "-", "-"],
            [
                "daemon end to end",
                n / daemon_wall,
                daemon_cpu / n,
                percentile(latencies, 50),
                percentile(latencies, 95),
            ],
        ],
    )
    verdict = "met" if cpu_overhead <= 0.15 else "not met"
    summary = (
        f"{args.preset} preset, {args.passes} passes, {n} PNG images of {args.size}x{args.size} "
        f"px over {args.cameras} camera folders, worker batch {args.batch}, {args.threads} "
        f"thread(s), random weights. Daemon overhead: {cpu_overhead:+.1%} CPU time per image "
        f"(target at most +15%: {verdict}), {wall_overhead:+.1%} wall time per image. Latency "
        "is file closed -> row committed, including the 100 ms size-stability wait and "
        "the queueing of a burst written all at once. Daemon resident memory: "
        f"{warm_rss:.0f} MiB once a quarter of the images were done, {end_rss:.0f} MiB at the "
        f"end ({growth:+.1f} MiB per 1000 images after warm-up)."
    )
    print(table)
    print()
    print(summary)
    print_json_line(
        "daemon_throughput",
        {
            "preset": args.preset,
            "passes": args.passes,
            "images": n,
            "size": args.size,
            "cameras": args.cameras,
            "batch": args.batch,
            "threads": args.threads,
            "detector_images_per_s": n / detector_wall,
            "daemon_images_per_s": n / daemon_wall,
            "detector_cpu_s_per_image": detector_cpu / n,
            "daemon_cpu_s_per_image": daemon_cpu / n,
            "latency_p50_s": percentile(latencies, 50),
            "latency_p95_s": percentile(latencies, 95),
            "cpu_overhead": cpu_overhead,
            "wall_overhead": wall_overhead,
            "rss_warm_mib": warm_rss,
            "rss_end_mib": end_rss,
            "rss_growth_mib_per_1000_images": growth,
        },
    )
    if args.write_docs:
        update_docs_section("daemon-throughput", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
