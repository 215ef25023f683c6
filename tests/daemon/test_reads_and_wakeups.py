"""Readers never take SQLite's write lock, and intake wakes the worker instead of it
polling: on a real migrated file, a real folder and the worker's real loop thread."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import OperationalError

from padformer_edge.daemon import worker as worker_module
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.intake import Camera, Intake
from padformer_edge.daemon.settings import IntakeConfig, WorkerConfig
from padformer_edge.daemon.worker import Worker
from padformer_edge.store import engine as engine_module
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.queue import due_alerts, enqueue
from tests.daemon.harness import encoded
from tests.detect_images import product_image


@pytest.fixture
def impatient(sqlite_file: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Engine]:
    """An engine that gives up on a held lock after 0.2 s instead of 30 s."""
    monkeypatch.setattr(engine_module, "BUSY_TIMEOUT_MS", 200)
    engine = open_engine(str(sqlite_file))
    yield engine
    engine.dispose()


def test_reads_go_on_while_another_process_holds_the_write_lock(tmp_path, sqlite_file, impatient):
    holder = sqlite3.connect(sqlite_file, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer in the middle of a transaction
    try:
        worker = Worker(impatient, {}, {}, WorkerConfig(), tmp_path, 1 << 20, AlertsConfig())
        assert worker.backlog() == 0
        assert due_alerts(impatient) == []
        with reading(impatient) as conn:
            assert conn.execute(text("SELECT 1")).scalar() == 1
        with pytest.raises(OperationalError, match="locked"):  # a write does wait for it
            enqueue(impatient, camera="c", product="p", source_path="/c/a.png",
                    sha256="a" * 64, size_bytes=1)  # fmt: skip
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_intake_wakes_an_idle_worker_and_stopping_wakes_it_too(tmp_path, sqlite_file, monkeypatch):
    monkeypatch.setattr(worker_module, "IDLE_RECHECK_S", 600.0)  # no timed re-check
    engine = open_engine(str(sqlite_file))
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    worker = Worker(engine, {}, {}, WorkerConfig(max_wait_ms=0), tmp_path, 1 << 20,
                    AlertsConfig())  # fmt: skip
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=0), on_queued=worker.wake)
    claimed: list[int] = []
    worker.run_batch = lambda **_: claimed.append(1) or 0  # type: ignore[method-assign]
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, args=(stop,), daemon=True)
    thread.start()
    try:
        time.sleep(0.3)  # let it count an empty backlog and go to sleep
        assert claimed == []
        (camera.root / "a.png").write_bytes(encoded(product_image(48, 64)))
        deadline = time.monotonic() + 30
        while not claimed and time.monotonic() < deadline:
            intake.step()
            time.sleep(0.05)
        assert claimed, "the worker did not look at the new row"
    finally:
        stop.set()
        worker.wake()
        thread.join(timeout=30)
        engine.dispose()
    assert not thread.is_alive()


def test_the_backlog_counts_this_lines_files_only(tmp_path, sqlite_file) -> None:
    """On a database lines share, the status line's backlog is this line's queue."""
    from padformer_edge.store.lines import with_line

    engine = open_engine(str(sqlite_file))
    other, mine = with_line(engine, "press-2"), with_line(engine, "press-1")
    for index in range(3):
        enqueue(other, camera="c", product="p", source_path=f"/c/{index}.png",
                sha256=f"{index}" * 64, size_bytes=1)  # fmt: skip
    enqueue(mine, camera="c", product="p", source_path="/c/mine.png", sha256="f" * 64,
            size_bytes=1)  # fmt: skip
    config, alerts = WorkerConfig(), AlertsConfig()
    assert Worker(mine, {}, {}, config, tmp_path, 1 << 20, alerts).backlog() == 1
    assert Worker(other, {}, {}, config, tmp_path, 1 << 20, alerts).backlog() == 3
    engine.dispose()
