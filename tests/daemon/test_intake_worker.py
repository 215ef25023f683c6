"""Intake and worker pieces in-process, on real folders and a real migrated SQLite file."""

from __future__ import annotations

import json
import os
import time
import tracemalloc
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session

from padformer_edge.daemon import intake as intake_module
from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.intake import Camera, Intake
from padformer_edge.daemon.settings import IntakeConfig, WorkerConfig
from padformer_edge.daemon.worker import Worker
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade as migrate
from padformer_edge.store.models import Alert, Inspection, Status, utc_now
from padformer_edge.store.queue import claim_batch, enqueue
from tests.daemon.harness import encoded
from tests.detect_images import product_image


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    migrate(engine)
    yield engine
    engine.dispose()


def _paths(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.scalars(select(Inspection.source_path).order_by(Inspection.id)))


def _step_until(intake: Intake, engine: Engine, count: int, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while len(_paths(engine)) < count and time.monotonic() < deadline:
        intake.step()
        time.sleep(0.05)


def test_a_half_written_png_waits_for_its_trailer(tmp_path: Path, engine: Engine) -> None:
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=50, settle_timeout_s=30))
    data = encoded(product_image(48, 64))
    target = camera.root / "a.png"
    with open(target, "wb") as handle:
        handle.write(data[: len(data) // 2])
        handle.flush()
        intake.offer(target, camera)
        for _ in range(8):  # well past stable_ms: the size is stable, the trailer missing
            intake.step()
            time.sleep(0.05)
        assert _paths(engine) == []
        handle.write(data[len(data) // 2 :])
    _step_until(intake, engine, 1)
    assert _paths(engine) == [str(target)]


def test_a_dead_observer_is_restarted_and_sees_new_files(tmp_path: Path, engine: Engine) -> None:
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=50, rescan_interval_s=3600))
    intake.start_observer()
    intake.step()  # the start-up scan, on an empty folder
    intake.stop_observer()  # the observer thread dies
    assert not intake.observer_alive()
    assert intake.ensure_observer() and intake.observer_alive()
    assert not intake.ensure_observer()  # healthy: left alone
    try:
        intake.next_scan = time.monotonic() + 3600  # only the new observer's events count
        (camera.root / "b.png").write_bytes(encoded(product_image(48, 64)))
        _step_until(intake, engine, 1)
    finally:
        intake.stop_observer()
    assert _paths(engine) == [str(camera.root / "b.png")]


def test_rows_past_the_deadline_are_skipped_with_an_alert(tmp_path: Path, engine: Engine) -> None:
    old = enqueue(
        engine,
        camera="cam",
        product="bolt",
        source_path="/cam/old.png",
        sha256="a" * 64,
        size_bytes=1,
        discovered_at=utc_now() - timedelta(hours=1),
    )
    new = enqueue(
        engine,
        camera="cam",
        product="bolt",
        source_path="/cam/new.png",
        sha256="b" * 64,
        size_bytes=1,
    )
    woken = []
    worker = Worker(
        engine,
        {},
        {},
        WorkerConfig(deadline_s=60),
        tmp_path,
        1 << 20,
        AlertsConfig(),
        on_alert=lambda: woken.append(1),
    )
    fresh = worker.skip_overdue(claim_batch(engine, 10))
    assert [r.id for r in fresh] == [new.id]
    with Session(engine) as session:
        skipped = session.get(Inspection, old.id)
        alerts = session.scalars(select(Alert)).all()
    assert skipped.status == Status.skipped and "deadline" in skipped.error
    assert [(a.inspection_id, a.sink) for a in alerts] == [(old.id, "log")]
    assert json.loads(alerts[0].payload)["kind"] == "skipped"
    assert woken == [1]


def test_a_failed_batch_gives_its_rows_back(tmp_path: Path, engine: Engine) -> None:
    for name in ("a", "b"):
        enqueue(
            engine,
            camera="cam",
            product="bolt",
            source_path=f"/cam/{name}.png",
            sha256=name * 64,
            size_bytes=1,
        )
    worker = Worker(engine, {}, {}, WorkerConfig(), tmp_path, 1 << 20, AlertsConfig())
    assert len(claim_batch(engine, 10)) == 2  # the batch whose processing then failed
    worker.release_claimed()
    assert [r.id for r in claim_batch(engine, 10)] == [1, 2]  # pending again, claimable


def test_the_scan_records_every_entry_past_a_non_utf8_name(tmp_path: Path, engine: Engine) -> None:
    """Files written while the daemon was down, a non-UTF-8 name and a FIFO among them:
    one scan queues every good file, refuses the name with a row, and never opens the
    FIFO (opening one would block intake)."""
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    good = [camera.root / f"{index:02d}.png" for index in range(6)]
    for index, path in enumerate(good):
        path.write_bytes(encoded(product_image(48, 64, index)))
    bad_name = os.fsencode(camera.root) + b"/03_bad_\xff\xfe_name.png"  # sorts among them
    with open(bad_name, "wb") as handle:
        handle.write(encoded(product_image(48, 64, 9)))
    os.mkfifo(camera.root / "04_fifo.png")
    (camera.root / "05_folder.png").mkdir()
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600))
    _step_until(intake, engine, len(good) + 2)
    with Session(engine) as session:
        found = {Path(r.source_path).name: r for r in session.scalars(select(Inspection))}
    assert set(found) == {*(p.name for p in good), "03_bad_\\xff\\xfe_name.png", "04_fifo.png"}
    refused = found["03_bad_\\xff\\xfe_name.png"]
    assert refused.status == Status.failed and "not valid UTF-8" in (refused.error or "")
    assert all(found[p.name].status == Status.pending for p in good)
    assert found["04_fifo.png"].status == Status.pending  # the worker refuses it unopened
    intake.scan()  # a second scan finds nothing new and logs nothing twice
    assert len(intake.reported) == 2  # the name refusal and the folder, once each


def test_files_left_in_the_camera_folder_cost_a_small_int_each(
    tmp_path: Path, engine: Engine
) -> None:
    """A line that never empties its camera folder keeps every inspected file there, so
    ``known`` holds one entry per image: each must stay a small integer (a path tuple
    cost ~600 bytes, most of the soak's 1 KiB-per-image budget), a rescan must still
    recognise every one of them without offering it again, and a file rewritten in place
    must be offered again."""
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    data = encoded(product_image(48, 64))
    for index in range(150):
        (camera.root / f"{index:06d}-part-with-a-long-camera-name.png").write_bytes(data)
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600))
    _step_until(intake, engine, 150, seconds=60)
    assert len(intake.known) == 150 and intake.scan() == 0
    # What a restarted daemon's first scan keeps for the same 150 recorded files.
    restarted = Intake(engine, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600))
    tracemalloc.start()
    try:
        assert restarted.scan() == 0
        # what intake's own code keeps (the set and its keys); a pool's one-off growth
        # (a weakref registry resized by the scan's first connection) is not per file
        own = tracemalloc.Filter(True, intake_module.__file__)
        snapshot = tracemalloc.take_snapshot().filter_traces([own])
    finally:
        tracemalloc.stop()
    kept = sum(stat.size for stat in snapshot.statistics("filename"))
    assert len(restarted.known) == 150
    assert kept / 150 < 200, kept
    rewritten = camera.root / "000007-part-with-a-long-camera-name.png"
    rewritten.write_bytes(data + b"\0")
    assert restarted.scan() == 1


def _settled(tmp_path: Path, engine: Engine, count: int) -> tuple[Intake, list[Path], float]:
    """``count`` complete camera files offered to a fresh intake and seen once (their
    size taken): the next step past ``stable_ms`` finds them all settled."""
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    intake = Intake(engine, [camera], IntakeConfig(stable_ms=50))
    paths = []
    for index in range(count):
        path = camera.root / f"{index}.png"
        path.write_bytes(encoded(product_image(32, 40, index)))
        intake.offer(path, camera)
        paths.append(path)
    start = time.monotonic()
    intake.next_scan = start + 3600  # no scan: only the offered files
    assert intake.step(start) == 0  # sizes recorded; nothing has been stable yet
    return intake, paths, start


def test_files_settled_in_one_step_are_queued_in_one_transaction(
    tmp_path: Path, engine: Engine
) -> None:
    intake, paths, start = _settled(tmp_path, engine, 5)
    commits: list[int] = []
    event.listen(engine, "commit", lambda _conn: commits.append(1))
    assert intake.step(start + 1.0) == 5
    assert len(commits) == 1
    assert _paths(engine) == [str(p) for p in paths]
    assert intake.settling == {}


def test_a_file_the_database_refuses_waits_and_the_others_are_queued(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step's transaction fails on one file: each is then queued on its own, and the
    refused one stays settling for the next step instead of holding the others back."""
    intake, paths, start = _settled(tmp_path, engine, 3)
    real = intake_module.enqueue_ids
    refused = str(paths[1])

    def enqueue_ids(engine: Engine, files: list) -> list:
        if any(f.source_path == refused for f in files):
            raise RuntimeError("database is locked (simulated for one file)")
        return real(engine, files)

    monkeypatch.setattr(intake_module, "enqueue_ids", enqueue_ids)
    assert intake.step(start + 1.0) == 2
    assert _paths(engine) == [str(paths[0]), str(paths[2])]
    assert list(intake.settling) == [paths[1]]
    refused = ""  # the database is back
    assert intake.step(start + 2.0) == 1
    assert sorted(_paths(engine)) == sorted(str(p) for p in paths)


def test_another_lines_rows_do_not_hide_a_file_from_this_lines_scan(
    tmp_path: Path, engine: Engine
) -> None:
    """Two lines on one database may watch folders at the same path on their own PCs: a
    file another line recorded is still new to this line's rescan."""
    from padformer_edge.store.lines import with_line

    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    data = encoded(product_image(48, 64))
    for index in range(3):
        (camera.root / f"{index}.png").write_bytes(data)
    other = with_line(engine, "press-2")
    _step_until(Intake(other, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600)),
                other, 3, seconds=60)  # fmt: skip
    again = Intake(other, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600))
    assert again.scan() == 0  # its own rows: nothing new to that line
    mine = with_line(engine, "press-1")
    assert Intake(mine, [camera], IntakeConfig(stable_ms=0, rescan_interval_s=3600)).scan() == 3
