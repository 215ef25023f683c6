"""The real daemon as the throughput benchmarks run it: a profile, a burst (or a steady
rate) of camera files, and the daemon's CPU, latency and memory while it inspects them.

``daemon_throughput.py`` (the Detector against the daemon) and ``host_side.py`` (the
daemon's host side with stored maps) both start the daemon this one way, so each
imports it from here rather than from the other.
"""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import cv2
import numpy as np
import torch
import yaml
from prometheus_client.parser import text_string_to_metric_families

from benchmarks.common import smooth_photo
from benchmarks.process_stats import rss_mib, tree_cpu_seconds
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.store.locations import resolve_stored

REPO = Path(__file__).resolve().parent.parent
STABLE_MS = 100
"""The daemon's ``intake.stable_ms`` in every run here (a file written in place waits it)."""


def png(image: np.ndarray) -> bytes:
    return cv2.imencode(".png", cv2.cvtColor(image, cv2.COLOR_RGB2BGR))[1].tobytes()


def encoded(image: np.ndarray, suffix: str) -> bytes:
    """``image`` (RGB) as a camera writes it: PNG, or JPEG at quality 90."""
    if suffix == ".png":
        return png(image)
    params = [cv2.IMWRITE_JPEG_QUALITY, 90]
    return cv2.imencode(suffix, cv2.cvtColor(image, cv2.COLOR_RGB2BGR), params)[1].tobytes()


def make_profile(
    root: Path,
    preset: str,
    passes: int,
    size: int,
    device: str = "cpu",
    references: list[np.ndarray] | None = None,
    metric: str = "auto",
    model_batch: int | None = None,
    frames: tuple[list[np.ndarray], np.ndarray] | None = None,
) -> None:
    """A profile with an explicit threshold no score reaches (no alerts): random weights of
    ``preset`` on smooth photos, or (``references`` given) the shipped model on them.
    ``frames``: random weights on these reference frames with this empty-belt photo, a
    framed profile (``profile create --background``) that finds the part in each frame."""
    torch.manual_seed(0)
    source = root / "sources"
    (source / "references").mkdir(parents=True, exist_ok=True)
    background = None
    if references is None:
        checkpoint = source / "model.safetensors"
        save_checkpoint(checkpoint, build_model(preset))
        references = [smooth_photo(size, seed, cells=6) for seed in range(4)]
        if frames is not None:
            references, belt = frames
            background = source / "belt.png"
            background.write_bytes(png(belt))
    else:
        from padformer_edge.weights import locate_generic_model

        checkpoint = locate_generic_model()
    for index, image in enumerate(references):
        (source / "references" / f"{index}.png").write_bytes(png(image))
    settings = DetectionSettings(
        passes=passes, device=device, max_batch=model_batch or passes, metric=metric
    )
    profile = create_profile(
        root / "profiles", "bench", checkpoint, source / "references", settings=settings,
        background=background,
    ).profile  # fmt: skip
    pin_threshold(profile, float("1e30"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def gpu_reserved_bytes(port: int) -> int | None:
    """The largest ``padformer_gpu_memory_reserved_bytes`` on the daemon's /metrics; None
    where the page shows no GPU (the CPU)."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as answer:
        text = answer.read().decode()
    values = [
        sample.value
        for family in text_string_to_metric_families(text)
        if family.name == "padformer_gpu_memory_reserved_bytes"
        for sample in family.samples
    ]
    return int(max(values)) if values else None


def wait_log(log: Path, event: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"daemon exited:\n{log.read_text()[-3000:]}")
        if f'"event": "{event}"' in log.read_text(errors="replace"):
            return
        time.sleep(0.1)
    raise SystemExit(f"daemon did not log {event} within {timeout}s")


def done_rows(database: Path) -> list[tuple[str, str, str, str]]:
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(
            "SELECT source_path, status, finished_at, discovered_at FROM inspections "
            "WHERE status NOT IN ('pending', 'processing')"
        ).fetchall()
    finally:
        conn.close()


def utc_seconds(stamp: str) -> float:
    """A row's naive UTC timestamp as seconds since the epoch."""
    return datetime.fromisoformat(stamp + "+00:00").timestamp()


def run_daemon(
    work: Path,
    payloads: list[bytes],
    cameras: int,
    batch: int,
    threads: int,
    device: str = "cpu",
    rate: float = 0.0,
    max_wait_ms: int = 100,
    burst_max_batch: int | None = None,
    suffix: str = ".png",
    profiles: Path | None = None,
    launcher: list[str] | None = None,
    arrival: str = "write",
    worker_settings: dict | None = None,
):
    """(wall s, CPU s, latencies s from file closed, latencies s from counted complete,
    resident MiB once a quarter of the images are done and at the end, GPU bytes
    reserved) of the daemon inspecting ``payloads`` (``suffix`` files): written at once,
    or ``rate`` per second. CPU is the daemon's and every process below it. ``launcher``
    starts the daemon's command line instead of ``python -m padformer_edge`` (the
    stored-map detector's, ``stored_maps.py``); ``profiles`` is the profiles root
    (default ``work/profiles``). ``arrival``: ``write`` writes each file in place (intake
    waits ``stable_ms`` for it), ``rename`` writes it under a temporary name
    (``.part``, which intake ignores) and renames it into place, as many cameras do; its
    latency counts from the rename. ``worker_settings``: more keys of the daemon's
    ``worker`` section (``host_threads``, ``heatmap_format``)."""
    folders = [work / "cameras" / f"cam{i}" for i in range(cameras)]
    for folder in folders:
        folder.mkdir(parents=True)
    database = work / "results.sqlite3"
    port = free_port()
    worker = {"max_batch": batch, "max_wait_ms": max_wait_ms, "device": device}
    if burst_max_batch is not None:
        worker["burst_max_batch"] = burst_max_batch
    worker.update(worker_settings or {})
    config = {
        "database": str(database),
        "profiles_dir": str(profiles or work / "profiles"),
        "heatmaps": str(work / "heatmaps"),
        "cameras": [{"name": f.name, "path": str(f), "profile": "bench"} for f in folders],
        "intake": {"stable_ms": STABLE_MS},
        "worker": worker,
        "http": {"host": "127.0.0.1", "port": port},
    }
    (work / "daemon.yaml").write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        # the repository first, then what the caller had (a GPU session's unpacked site)
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        "PADFORMER_EDGE_STATE_DIR": str(work),
    }
    env.pop("NOTIFY_SOCKET", None)
    log = work / "daemon.log"
    command = ["--log-format", "json", "watch", "--config", str(work / "daemon.yaml")]
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            [*(launcher or [sys.executable, "-m", "padformer_edge"]), *command],
            cwd=REPO,
            env=env,
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_log(log, "daemon.ready", process, 600)
        cpu_before = tree_cpu_seconds(process.pid)
        closed: dict[str, float] = {}
        began = time.monotonic()
        for index, data in enumerate(payloads):
            if rate > 0:  # a steady offered rate: file i is due i / rate after the first
                time.sleep(max(0.0, began + index / rate - time.monotonic()))
            path = folders[index % cameras] / f"{index:05d}{suffix}"
            if arrival == "rename":
                temporary = path.with_name(path.name + ".part")
                temporary.write_bytes(data)
                os.rename(temporary, path)
            else:
                path.write_bytes(data)
            closed[str(path)] = time.time()
        warm_rss = None
        while len(rows := done_rows(database)) < len(payloads):
            if process.poll() is not None:
                raise SystemExit(f"daemon exited:\n{log.read_text()[-3000:]}")
            if warm_rss is None and len(rows) >= len(payloads) // 4:
                warm_rss = rss_mib(process.pid)
            time.sleep(0.05)
        cpu = tree_cpu_seconds(process.pid) - cpu_before
        end_rss = rss_mib(process.pid)
        gpu_bytes = gpu_reserved_bytes(port)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(120)
    if {row[1] for row in rows} != {"done"}:
        raise SystemExit(f"not every row is done: {rows[:5]}")
    # rows record camera files under the state folder relative to it (store.locations)
    files = {recorded: str(resolve_stored(recorded, work)) for recorded, *_ in rows}
    finished = {files[path]: utc_seconds(at) for path, _, at, _ in rows}
    counted = {files[path]: utc_seconds(found) for path, _, _, found in rows}
    latencies = [finished[path] - closed[path] for path in closed]
    queued = [finished[path] - counted[path] for path in closed]
    wall = max(finished.values()) - min(closed.values())
    return wall, cpu, latencies, queued, (warm_rss or end_rss, end_rss), gpu_bytes
