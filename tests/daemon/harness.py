"""The real daemon as a subprocess on real folders, with a tiny random-weight model.

The daemon's job under test is mechanics (no file lost, none done twice, bad files
recorded), so the model is the tiny preset with random weights and two passes: fast on
one CPU thread, and exercising the same code paths as a trained one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch
import yaml
from sqlalchemy import Engine

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import enqueue
from tests.detect_images import product_image

REPO = Path(__file__).resolve().parents[2]


def write_image(path: Path, image: np.ndarray) -> Path:
    """Encode with OpenCV by suffix and write the bytes in one go."""
    ok, data = cv2.imencode(path.suffix, cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    assert ok
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.tobytes())
    return path


def encoded(image: np.ndarray, suffix: str = ".png") -> bytes:
    ok, data = cv2.imencode(suffix, cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    assert ok
    return data.tobytes()


def queued_images(tmp_path: Path, count: int) -> tuple[Engine, Path]:
    """A fresh history at the schema's head and ``count`` distinct product images in
    ``tmp_path/cam``, each queued for camera ``c`` of product ``p``: the worker's input
    without intake, for tests that drive the worker directly."""
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    upgrade(engine)
    folder = tmp_path / "cam"
    folder.mkdir()
    for index in range(count):
        data = encoded(product_image(32, 40, seed=index))
        path = folder / f"{index}.png"
        path.write_bytes(data)
        enqueue(engine, camera="c", product="p", source_path=str(path),
                sha256=hashlib.sha256(data).hexdigest(), size_bytes=len(data))  # fmt: skip
    return engine, folder


@dataclass
class Site:
    """A state directory with a checkpoint, references, camera folders and a config."""

    root: Path
    cameras: dict[str, Path]
    config: Path
    database: Path
    heatmaps: Path


def make_profile(profiles: Path, name: str, threshold: float, passes: int = 2) -> None:
    """A profile through the profiles API with a tiny random checkpoint, then a threshold
    written in by hand: the tests choose which results are anomalous, so it is set here
    rather than calibrated on images."""
    torch.manual_seed(0)
    source = profiles.parent / "sources" / name
    save_checkpoint(source / "model.safetensors", build_model("tiny"))
    for seed in range(2):
        write_image(source / f"references/{seed}.png", product_image(48, 64, seed))
    settings = DetectionSettings(metric="auto", passes=passes, device="cpu")
    profile = create_profile(
        profiles, name, source / "model.safetensors", source / "references", settings=settings
    ).profile
    pin_threshold(profile, threshold)


def make_site(
    root: Path,
    cameras: tuple[str, ...] = ("cam0",),
    threshold: float = 1e9,
    passes: int = 2,
    profile: Path | None = None,
    **sections: dict,
) -> Site:
    """Camera folders, a profile ``bolt`` and a daemon config; ``sections`` override it.
    ``profile``: a profile folder made once (``tests.daemon.plant_chaos.line_profile``)
    copied in as ``bolt`` with ``threshold`` pinned, instead of a new tiny torch one."""
    state = root / "state"
    if profile is None:
        make_profile(state / "profiles", "bolt", threshold, passes)
    else:
        shutil.copytree(profile, state / "profiles" / "bolt")
        pin_threshold(load_profile(state / "profiles", "bolt"), threshold)
    folders = {name: root / "cameras" / name for name in cameras}
    for folder in folders.values():
        folder.mkdir(parents=True)
    config = {
        "database": str(state / "results.sqlite3"),
        "cameras": [{"name": n, "path": str(p), "profile": "bolt"} for n, p in folders.items()],
        "intake": {"stable_ms": 100, "settle_timeout_s": 2.0, "rescan_interval_s": 30.0},
        "worker": {"max_batch": 8, "max_wait_ms": 50, "device": "cpu"},
    }
    for key, value in sections.items():
        config[key] = {**config.get(key, {}), **value} if isinstance(value, dict) else value
    path = root / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return Site(root, folders, path, state / "results.sqlite3", state / "heatmaps")


class DaemonProcess:
    """``python -m padformer_edge watch`` with its JSON log captured to a file."""

    def __init__(
        self,
        site: Site,
        env: dict[str, str] | None = None,
        launcher: Sequence[str] = ("-m", "padformer_edge"),
    ) -> None:
        """``launcher``: the ``python`` arguments before the CLI's own (another way into
        the same CLI, such as ``tests.daemon.held_import``'s)."""
        self.site = site
        self.log = site.root / f"daemon-{time.monotonic_ns()}.log"
        base = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
        full_env = {
            **base,
            "PYTHONPATH": str(REPO),
            "OMP_NUM_THREADS": "1",
            "PADFORMER_EDGE_STATE_DIR": str(site.root / "state"),
            **(env or {}),
        }
        command = [sys.executable, *launcher, "--log-format", "json", "watch"]
        with open(self.log, "wb") as handle:  # the child keeps its own copy of the fd
            self.process = subprocess.Popen(
                [*command, "--config", str(site.config)],
                cwd=REPO,
                env=full_env,
                stdout=handle,
                stderr=subprocess.STDOUT,
            )

    def events(self) -> list[dict]:
        out = []
        for line in self.log.read_text(errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        return out

    def wait_ready(self, timeout: float = 60.0) -> None:
        wait_for(
            lambda: any(e.get("event") == "daemon.ready" for e in self.events()), timeout, self
        )

    def terminate(self, timeout: float = 60.0) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        self.process.kill()
        self.wait(10)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout)

    def alive(self) -> bool:
        return self.process.poll() is None

    def __enter__(self) -> DaemonProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.alive():
            self.kill()


def wait_for(
    condition: Callable[[], bool],
    timeout: float,
    daemon: DaemonProcess | None = None,
    what: str = "condition",
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if daemon is not None and not daemon.alive():
            raise AssertionError(f"daemon exited early:\n{daemon.log.read_text()[-4000:]}")
        time.sleep(0.1)
    tail = daemon.log.read_text()[-4000:] if daemon is not None else ""
    raise AssertionError(f"timed out waiting for {what}\n{tail}")


def rows(database: Path) -> list[dict]:
    """Every inspection row, read through a separate read-only connection."""
    if not database.exists():
        return []
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM inspections ORDER BY id")]
    except sqlite3.OperationalError:
        return []  # not migrated yet
    finally:
        conn.close()


def settled(database: Path, expected: int) -> Callable[[], bool]:
    """True once ``expected`` rows exist and none is pending or processing."""

    def check() -> bool:
        current = rows(database)
        return len(current) >= expected and all(
            r["status"] not in ("pending", "processing") for r in current
        )

    return check
