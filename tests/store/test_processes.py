"""Real processes on a real file: readers beside a busy writer, and a writer killed mid-write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from sqlalchemy import func, select, text

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import integrity_errors
from padformer_edge.store.models import Inspection
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue

from .seed import digest

ROOT = Path(__file__).resolve().parents[2]


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _ids(path: Path) -> list[int]:
    with open_engine(str(path), read_only=True).connect() as conn:
        return list(conn.execute(select(Inspection.id).order_by(Inspection.id)).scalars())


def test_readers_never_block_or_lose_rows_beside_a_busy_writer(
    sqlite_file: Path, tmp_path: Path
) -> None:
    engine = open_engine(str(sqlite_file))
    inserted: list[int] = []
    stop = threading.Event()

    def daemon_like_writer() -> None:  # the daemon's pattern: enqueue, claim, complete
        i = 0
        while not stop.is_set():
            row = enqueue(
                engine,
                camera="cam",
                product="p",
                source_path=f"/cams/{i}.png",
                sha256=digest(str(i)),
                size_bytes=1,
            )
            (claimed,) = claim_batch(engine, 1)
            complete(
                engine,
                claimed.id,
                DetectionOutcome(
                    score=0.1, threshold=1.0, heatmap_path=None, model_sha256="m", detect_ms=1.0
                ),
            )
            inserted.append(row.id)
            i += 1

    writer = threading.Thread(target=daemon_like_writer)
    writer.start()
    try:
        reader = _spawn("-m", "tests.store.workers", "reader", str(sqlite_file), "4")
        out = tmp_path / "during.csv"
        cli = _spawn(
            "-m", "padformer_edge", "results", "export", "--db", str(sqlite_file), str(out)
        )
        cli_out, cli_err = cli.communicate(timeout=120)
        # A second writer (nothing is old enough to go, but it still takes the write lock).
        pruner = _spawn("-m", "padformer_edge", "results", "prune", "--older-than", "30d",
                        "--db", str(sqlite_file))  # fmt: skip
        prune_out, prune_err = pruner.communicate(timeout=120)
        reader_out, reader_err = reader.communicate(timeout=120)
    finally:
        stop.set()
        writer.join()
    assert reader.returncode == 0 and "locked" not in reader_err, reader_err
    assert cli.returncode == 0 and "locked" not in cli_err, cli_err
    assert pruner.returncode == 0 and prune_out.startswith("pruned 0 inspections"), prune_err
    rounds = [json.loads(line) for line in reader_out.splitlines()]
    assert len(rounds) >= 2 and all(r["contiguous"] for r in rounds)
    exported = [r["exported"] for r in rounds]
    assert exported == sorted(exported) and exported[-1] > exported[0]  # it saw the writer
    assert len(out.read_text().splitlines()) - 1 == int(cli_out.split()[1]) > 0
    assert _ids(sqlite_file) == inserted == list(range(1, len(inserted) + 1))


def test_sigkill_during_commits_keeps_every_committed_row(sqlite_file: Path) -> None:
    child = _spawn("-m", "tests.store.workers", "stream", str(sqlite_file))
    assert child.stdout is not None
    committed = [int(child.stdout.readline()) for _ in range(150)]
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    engine = open_engine(str(sqlite_file))
    assert integrity_errors(engine) == []
    stored = _ids(sqlite_file)
    assert stored[: len(committed)] == committed  # every reported commit is there
    assert stored == list(range(1, len(stored) + 1))  # and nothing half-written beside them


def test_sigkill_inside_an_open_transaction_rolls_it_back(sqlite_file: Path) -> None:
    child = _spawn("-m", "tests.store.workers", "hold", str(sqlite_file))
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "open"
    assert os.path.getsize(str(sqlite_file) + "-wal") > 0
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    engine = open_engine(str(sqlite_file))
    assert integrity_errors(engine) == []
    assert _ids(sqlite_file) == list(range(1, 21))
    # The dead writer's lock died with it: a stale one would make this wait out
    # busy_timeout and raise "database is locked".
    enqueue(
        engine,
        camera="cam",
        product="p",
        source_path="/after.png",
        sha256=digest("after"),
        size_bytes=1,
    )
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Inspection)).scalar() == 21
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
