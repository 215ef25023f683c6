"""The worker overlaps its stages during a burst: while one batch is detected, the next is
already claimed and decoded in a thread, and the previous one's heatmaps and commits run
in another; a stop still leaves every row finished, none ``processing``.

The detector is a stand-in that waits for the evidence of each overlap (with a generous
bound, never a timing assertion); the queue, files, heatmaps and commits are real.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import Engine, event, func, select

from padformer_edge.daemon import worker as worker_module
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.inspectors import Inspector
from padformer_edge.daemon.intake import Camera
from padformer_edge.daemon.overlap import Finisher
from padformer_edge.daemon.settings import WorkerConfig
from padformer_edge.daemon.worker import Worker, heatmap_path
from padformer_edge.detect.detection import Detection
from padformer_edge.store.locations import resolve_stored
from padformer_edge.store.models import Alert, Inspection, Status
from padformer_edge.store.queue import AlertRequest, claim_batch
from tests.daemon.harness import queued_images

BOUND_S = 60.0  # how long a stand-in waits for what the overlap promises before failing
BATCH = 3
POLL_S = 0.01


def done_count(engine: Engine) -> int:
    with engine.connect() as conn:
        query = select(func.count()).select_from(Inspection).where(Inspection.status == Status.done)
        return int(conn.execute(query).scalar() or 0)


class Watching:
    """Scores by mean pixel; at each call after the first, waits until the previous
    batches are committed (the finisher worked while this call runs) and records whether
    the next batch was claimed and decoded by then (the decoding thread worked)."""

    device = "cpu"
    max_batch = 8

    def __init__(self, engine: Engine) -> None:
        self.engine, self.worker = engine, None
        self.calls = 0
        self.ahead_decoded: list[bool] = []
        self.committed_meanwhile: list[bool] = []
        self.stop_after: int | None = None
        self.stop: threading.Event | None = None

    def detect(self, images: list[np.ndarray]) -> list[Detection]:
        worker = self.worker
        assert worker is not None
        ahead = worker.next_batch
        if ahead is not None:
            ahead[1].result(timeout=BOUND_S)  # decoded in its thread while this call runs
        self.ahead_decoded.append(ahead is not None)
        if self.calls:
            expected = self.calls * BATCH
            for _ in range(int(BOUND_S / POLL_S)):  # a bound for a broken worker, no timing
                if done_count(self.engine) >= expected:
                    break
                time.sleep(POLL_S)
            self.committed_meanwhile.append(done_count(self.engine) >= expected)
        self.calls += 1
        if self.stop_after is not None and self.calls == self.stop_after and self.stop:
            self.stop.set()
        return [
            Detection(
                float(i.mean()) / 255, np.zeros(i.shape[:2], np.float32), [], [], {"total": 0.0}
            )
            for i in images
        ]


def burst(tmp_path: Path, count: int) -> tuple[Engine, Worker, Watching]:
    engine, folder = queued_images(tmp_path, count)
    detector = Watching(engine)
    worker = Worker(
        engine, {"c": Camera("c", folder, "p")},
        {"c": Inspector("p", detector, 0.99, "0" * 64)},  # type: ignore[arg-type]
        WorkerConfig(max_batch=BATCH, max_wait_ms=0), tmp_path / "heat", 1 << 20, AlertsConfig(),
    )  # fmt: skip
    detector.worker = worker
    return engine, worker, detector


def statuses(engine: Engine) -> list[tuple[int, Status]]:
    with engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(Inspection.id, Inspection.status)).all()]


def test_a_burst_overlaps_decoding_detection_and_commits(tmp_path: Path) -> None:
    engine, worker, detector = burst(tmp_path, 4 * BATCH)
    stop = threading.Event()
    detector.stop, detector.stop_after = stop, 4  # the fourth batch is the last
    worker.run(stop)
    rows = statuses(engine)
    engine.dispose()
    assert [status for _, status in rows] == [Status.done] * (4 * BATCH)
    assert all(heatmap_path(tmp_path / "heat", row_id).is_file() for row_id, _ in rows)
    # while batches 1-3 were detected, the next was claimed and decoded in its thread; the
    # last found no full batch more queued
    assert detector.ahead_decoded == [True, True, True, False]
    # while batches 2-4 were detected, the batches before them were committed
    assert detector.committed_meanwhile == [True, True, True]


def test_a_stop_mid_burst_finishes_the_batch_claimed_ahead(tmp_path: Path) -> None:
    engine, worker, detector = burst(tmp_path, 5 * BATCH)
    stop = threading.Event()
    detector.stop, detector.stop_after = stop, 2  # stop while batch 3 is claimed ahead
    worker.run(stop)
    rows = statuses(engine)
    engine.dispose()
    counts = {s: sum(1 for _, status in rows if status is s) for s in Status}
    assert counts[Status.processing] == 0  # nothing left half-done
    assert counts[Status.done] == 3 * BATCH and counts[Status.pending] == 2 * BATCH
    assert worker.next_batch is None


def test_the_finisher_runs_jobs_in_order_and_survives_a_failing_one() -> None:
    finisher, ran = Finisher(depth=1), []
    gate = threading.Event()
    finisher.submit(lambda: (gate.wait(BOUND_S), ran.append(1)))
    finisher.submit(lambda: 1 / 0)  # logged, not fatal
    gate.set()
    finisher.submit(lambda: ran.append(3))
    finisher.drain()
    assert ran == [1, 3]
    finisher.close()
    assert finisher._thread is None


def test_a_commit_the_finisher_cannot_record_gives_the_rows_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the database away, neither the result nor the failure can be written: the
    worker's next turn gives every claimed row back, as when its own thread fails."""
    engine, worker, _ = burst(tmp_path, BATCH)

    def away(*_: object, **__: object) -> None:
        raise RuntimeError("database is away (simulated)")

    monkeypatch.setattr(worker_module, "complete_many", away)
    monkeypatch.setattr(worker_module, "complete", away)
    monkeypatch.setattr(worker_module, "fail", away)
    assert worker.run_batch(wait=False) == BATCH
    worker.finishing.drain()
    assert {status for _, status in statuses(engine)} == {Status.processing}
    stop = threading.Event()
    stop.set()  # no back-off wait
    worker._guarded(stop, prefetch=False)
    worker.finishing.close()
    rows = statuses(engine)
    engine.dispose()
    assert [status for _, status in rows] == [Status.pending] * BATCH


def claimed(tmp_path: Path, count: int) -> tuple[Engine, Worker, list]:
    """``count`` rows claimed and decoded by a worker, with a detection each (score by
    mean pixel, a calm map): what ``finish_all`` gets after a detector call."""
    engine, worker, _ = burst(tmp_path, count)
    decoded = worker.prepare(claim_batch(engine, count))
    items = [
        (row, image, Detection(float(image.mean()) / 255, np.zeros(image.shape[:2], np.float32),
                               [], [], {"total": 0.0}))
        for row, image in decoded
    ]  # fmt: skip
    return engine, worker, items


def commits(engine: Engine) -> list[int]:
    """A list that grows by one at every transaction the engine commits."""
    seen: list[int] = []
    event.listen(engine, "commit", lambda _conn: seen.append(1))
    return seen


def test_a_batchs_results_are_committed_in_one_transaction(tmp_path: Path) -> None:
    """Every heatmap is in place, then one transaction records the whole batch."""
    engine, worker, items = claimed(tmp_path, BATCH)
    seen = commits(engine)
    worker.finish_all(items, worker.inspectors["c"], [])
    assert len(seen) == 1
    assert [status for _, status in statuses(engine)] == [Status.done] * BATCH
    assert all(heatmap_path(tmp_path / "heat", row.id).is_file() for row, _, _ in items)
    engine.dispose()


def test_a_batch_syncs_its_heatmap_folder_once_after_its_files_and_before_its_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each heatmap's data is synced before its rename, the shard folder once for the
    batch, and only then is the batch committed (the real ``os.fsync`` still runs)."""
    engine, worker, items = claimed(tmp_path, BATCH)
    order: list[str] = []
    real = os.fsync

    def watching(fd: int) -> None:
        order.append("dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file")
        real(fd)

    monkeypatch.setattr(os, "fsync", watching)
    event.listen(engine, "commit", lambda _conn: order.append("commit"))
    worker.finish_all(items, worker.inspectors["c"], [])
    assert order == ["file"] * BATCH + ["dir", "commit"]
    assert [status for _, status in statuses(engine)] == [Status.done] * BATCH
    engine.dispose()


def test_a_heatmap_folder_that_cannot_be_synced_commits_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without the folder's sync the renames may not survive a power cut: no row of the
    batch is recorded done, each goes back for another try with the reason."""
    engine, worker, items = claimed(tmp_path, BATCH)

    def refused(_folders: object) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(worker_module, "sync_folders", refused)
    worker.finish_all(items, worker.inspectors["c"], [])
    assert [status for _, status in statuses(engine)] == [Status.pending] * BATCH
    with engine.connect() as conn:
        reasons = {r for (r,) in conn.execute(select(Inspection.error))}
    said = "storing the result failed: OSError: cannot sync the heatmaps' folder: "
    assert reasons == {said + "Input/output error"}
    engine.dispose()


def test_a_row_whose_heatmap_cannot_be_written_fails_alone(tmp_path: Path) -> None:
    """The others of its batch are committed together; it goes back for another try."""
    engine, worker, items = claimed(tmp_path, BATCH)
    blocked = items[1][0].id
    heatmap_path(tmp_path / "heat", blocked).mkdir(parents=True)  # no file can go there
    seen = commits(engine)
    worker.finish_all(items, worker.inspectors["c"], [])
    assert len(seen) == 2  # the failure, then the batch
    rows = dict(statuses(engine))
    assert rows.pop(blocked) == Status.pending
    assert set(rows.values()) == {Status.done}
    engine.dispose()


def test_a_batch_the_store_refuses_is_committed_row_by_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the batch's transaction fails, each row is tried in a transaction of its own,
    so one row the store cannot take never costs the others their results."""

    def refused(*_: object, **__: object) -> None:
        raise RuntimeError("the batch's transaction failed (simulated)")

    monkeypatch.setattr(worker_module, "complete_many", refused)
    engine, worker, items = claimed(tmp_path, BATCH)
    seen = commits(engine)
    worker.finish_all(items, worker.inspectors["c"], [])
    assert len(seen) == BATCH
    assert [status for _, status in statuses(engine)] == [Status.done] * BATCH
    engine.dispose()


class MeanScore:
    """Scores by mean pixel, with a map that rises across the image (some of it above
    the threshold of 0.5, so heatmaps have an outline to draw)."""

    device = "cpu"
    max_batch = 8

    def detect(self, images: list[np.ndarray]) -> list[Detection]:
        return [
            Detection(float(i.mean()) / 255,
                      np.linspace(0, 1, i.shape[0] * i.shape[1], dtype=np.float32)
                      .reshape(i.shape[:2]), [], [], {"total": 0.0})
            for i in images
        ]  # fmt: skip


def run_through(root: Path, threads: int, count: int) -> tuple[dict, set[str]]:
    """Every row of ``count`` queued images (one of them changed after it was queued)
    run through a worker with ``host_threads`` of ``threads``: per file its status,
    score, reason and heatmap bytes, and the names of the threads that wrote heatmaps."""
    root.mkdir()
    engine, folder = queued_images(root, count)
    (folder / "1.png").write_bytes((folder / "2.png").read_bytes())  # refused: it changed
    writers: set[str] = set()
    real_write = worker_module.write_heatmap

    def recording(*args: object, **kwargs: object) -> Path:
        writers.add(threading.current_thread().name)
        return real_write(*args, **kwargs)  # type: ignore[arg-type]

    worker_module.write_heatmap = recording  # type: ignore[assignment]
    try:
        worker = Worker(
            engine, {"c": Camera("c", folder, "p")},
            {"c": Inspector("p", MeanScore(), 0.5, "0" * 64)},  # type: ignore[arg-type]
            WorkerConfig(max_batch=BATCH, max_wait_ms=0, host_threads=threads),
            root / "heat", 1 << 20, AlertsConfig(),
        )  # fmt: skip
        while worker.run_batch(wait=True):
            pass
        worker.host.close()
    finally:
        worker_module.write_heatmap = real_write
    with engine.connect() as conn:
        found = conn.execute(
            select(Inspection.id, Inspection.source_path, Inspection.status, Inspection.score,
                   Inspection.error, Inspection.heatmap_path)
        ).all()  # fmt: skip
    engine.dispose()
    results = {
        Path(source).name: (status, score, error, heatmap and resolve_stored(heatmap))
        for _, source, status, score, error, heatmap in found
    }
    return results, writers


def test_host_threads_change_nothing_a_row_gets(tmp_path: Path) -> None:
    """Decoding and heatmaps in several threads: every row ends as it does in one
    thread (the same status, score, reason and heatmap bytes), the heatmaps drawn in
    the pool's threads rather than the worker's."""
    alone, one_writer = run_through(tmp_path / "one", 1, 2 * BATCH)  # no batch of one,
    pooled, writers = run_through(tmp_path / "pool", 3, 2 * BATCH)  # which runs in place
    assert one_writer == {threading.current_thread().name}
    assert writers and all(name.startswith("host") for name in writers)
    assert alone.keys() == pooled.keys()
    for name, (status, score, error, heatmap) in alone.items():
        again = pooled[name]
        assert again[:3] == (status, score, error), name
        if heatmap is None:
            assert again[3] is None
        else:
            assert again[3].read_bytes() == heatmap.read_bytes(), name
    assert alone["1.png"][0] == Status.failed and "changed" in alone["1.png"][2]
    assert sum(status == Status.done for status, *_ in alone.values()) == 2 * BATCH - 1


def test_a_notice_goes_with_the_first_row_that_has_its_heatmap(tmp_path: Path) -> None:
    """An alert planned for the batch (a GPU moved to the CPU) is stored with a result
    that is committed, even when the batch's first row fails at its heatmap."""
    engine, worker, items = claimed(tmp_path, BATCH)
    heatmap_path(tmp_path / "heat", items[0][0].id).mkdir(parents=True)  # no file there
    notice = AlertRequest(sink="log", payload={"reason": "moved to the CPU"})
    worker.finish_all(items, worker.inspectors["c"], [notice])
    with engine.connect() as conn:
        stored = conn.execute(select(Alert.inspection_id, Alert.payload)).all()
    engine.dispose()
    assert [(row_id, "moved to the CPU" in payload) for row_id, payload in stored] == [
        (items[1][0].id, True)
    ]
