"""A production line in miniature: the real daemon as a child process, and a camera.

The daemon is started exactly as systemd would start it, down to ``NOTIFY_SOCKET``: the
demo listens on its own socket and starts the camera only after ``READY=1``, which the
daemon sends once its database is migrated and its model loaded and warmed up.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from padformer_edge.errors import UserError
from padformer_edge.store.engine import open_engine
from padformer_edge.store.models import Alert, AlertState, Inspection, Status

FINISHED = (Status.done, Status.failed, Status.skipped, Status.no_part)


def log_tail(path: Path, lines: int = 5) -> str:
    text = path.read_text(errors="replace").strip().splitlines() if path.exists() else []
    return " | ".join(text[-lines:]) or "(empty)"


class DaemonProcess:
    """``padformer-edge watch --config FILE`` in a child process, logging to a file."""

    def __init__(self, config: Path, log_path: Path) -> None:
        self.config, self.log_path = config, log_path
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, ready_timeout_s: float) -> None:
        """Start the daemon and block until it reports READY=1 (or fails to)."""
        with tempfile.TemporaryDirectory(prefix="pe-notify-") as folder:
            address = str(Path(folder) / "notify")  # short: socket paths are capped at 107
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as listener:
                listener.bind(address)
                listener.settimeout(0.5)
                with open(self.log_path, "ab") as log:
                    self.process = subprocess.Popen(
                        [sys.executable, "-m", "padformer_edge", "--log-format", "json",
                         "watch", "--config", str(self.config)],
                        stdout=log, stderr=subprocess.STDOUT,
                        env={**os.environ, "NOTIFY_SOCKET": address},
                    )  # fmt: skip
                self._await_ready(listener, ready_timeout_s)

    def _await_ready(self, listener: socket.socket, timeout_s: float) -> None:
        assert self.process is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise UserError(
                    f"the daemon exited with status {self.process.returncode} before it was "
                    f"ready; its log {self.log_path} ends: {log_tail(self.log_path)}"
                )
            try:
                message = listener.recv(4096).decode(errors="replace")
            except TimeoutError:
                continue
            if "READY=1" in message.splitlines():
                return
        self.stop()
        raise UserError(
            f"the daemon was not ready after {timeout_s:.0f} s; see its log {self.log_path}."
        )

    def stop(self, timeout_s: float = 120.0) -> int:
        """SIGTERM, as systemd stops it; the daemon finishes its batch and exits."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def deliver_as_camera(image: Path, folder: Path, name: str) -> Path:
    """Write under a hidden name, then rename into place: what most camera software does."""
    partial = folder / f".{name}.part"
    partial.write_bytes(image.read_bytes())
    final = folder / name
    os.replace(partial, final)
    return final


def wait_until_finished(
    database: Path, expected: int, daemon: DaemonProcess, timeout_s: float
) -> None:
    """Poll the database (read-only) until ``expected`` files have a final status."""
    deadline = time.monotonic() + timeout_s
    engine = open_engine(str(database), read_only=True)
    query = select(func.count()).where(Inspection.status.in_(FINISHED))
    try:
        while time.monotonic() < deadline:
            with Session(engine) as session:
                if session.scalar(query) >= expected:
                    return
            if not daemon.alive():
                raise UserError(
                    f"the daemon stopped while images were waiting; its log "
                    f"{daemon.log_path} ends: {log_tail(daemon.log_path)}"
                )
            time.sleep(0.5)
    finally:
        engine.dispose()
    raise UserError(
        f"the daemon did not finish {expected} images in {timeout_s:.0f} s; see its log "
        f"{daemon.log_path}."
    )


def wait_for_alerts(database: Path, daemon: DaemonProcess, timeout_s: float) -> None:
    """Give the daemon's dispatcher time to deliver what the last results raised."""
    deadline = time.monotonic() + timeout_s
    engine = open_engine(str(database), read_only=True)
    query = select(func.count()).where(Alert.state == AlertState.pending)
    try:
        while daemon.alive() and time.monotonic() < deadline:
            with Session(engine) as session:
                if session.scalar(query) == 0:
                    return
            time.sleep(0.5)
    finally:
        engine.dispose()
