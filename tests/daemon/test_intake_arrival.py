"""How a file arrives decides how long intake waits: the real watchdog observer on real
folders, a real migrated SQLite file. A file renamed into place is complete when it
appears and is queued without waiting ``stable_ms``; one written in place still waits.

``stable_ms`` is a minute here, so a file queued within the test's ten-second bound can
only have been taken as renamed; each test asserts the decision intake recorded
(``Intake.arrivals``), never how long anything took.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session
from watchdog.events import FileSystemEvent

from padformer_edge.daemon import intake as intake_module
from padformer_edge.daemon.intake import Arrival, Camera, Intake
from padformer_edge.daemon.settings import IntakeConfig
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade as migrate
from padformer_edge.store.models import Inspection
from tests.daemon.harness import encoded
from tests.detect_images import product_image

STABLE_MS = 60_000
WAIT_S = 10.0  # a bound on waiting for the observer's events, never asserted on


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    engine = open_engine(str(tmp_path / "results.sqlite3"))
    migrate(engine)
    yield engine
    engine.dispose()


@pytest.fixture
def watched(tmp_path: Path, engine: Engine) -> Iterator[tuple[Intake, Camera]]:
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    config = IntakeConfig(stable_ms=STABLE_MS, settle_timeout_s=600, rescan_interval_s=3600)
    intake = Intake(engine, [camera], config)
    intake.start_observer()
    intake.step()  # the start-up scan, on an empty folder
    try:
        yield intake, camera
    finally:
        intake.stop_observer()


def _paths(engine: Engine) -> list[str]:
    with Session(engine) as session:
        return list(session.scalars(select(Inspection.source_path)))


def _step_until_queued(intake: Intake, engine: Engine) -> None:
    """Step as the daemon's intake thread does (woken by a renamed file) until a row is
    queued or the bound passes."""
    deadline = time.monotonic() + WAIT_S
    while not _paths(engine) and time.monotonic() < deadline:
        intake.wait_for_offer(0.1)
        intake.step()


def test_a_file_renamed_in_from_another_folder_is_taken_at_once(
    tmp_path: Path, engine: Engine, watched: tuple[Intake, Camera]
) -> None:
    intake, camera = watched
    staging = tmp_path / "staging"  # where the camera writes, not watched
    staging.mkdir()
    (staging / "a.png").write_bytes(encoded(product_image(48, 64)))
    os.rename(staging / "a.png", camera.root / "a.png")
    _step_until_queued(intake, engine)
    assert _paths(engine) == [str(camera.root / "a.png")]
    assert intake.arrivals == {Arrival.RENAMED: 1}


def test_a_temporary_name_renamed_in_the_folder_is_taken_at_once(
    engine: Engine, watched: tuple[Intake, Camera]
) -> None:
    intake, camera = watched
    temporary = camera.root / "b.png.part"  # ignored by name while it is written
    temporary.write_bytes(encoded(product_image(48, 64)))
    os.rename(temporary, camera.root / "b.png")
    _step_until_queued(intake, engine)
    assert _paths(engine) == [str(camera.root / "b.png")]
    assert intake.arrivals == {Arrival.RENAMED: 1}


def test_a_file_written_in_place_still_waits_for_stability(
    engine: Engine, watched: tuple[Intake, Camera]
) -> None:
    intake, camera = watched
    target = camera.root / "c.png"
    data = encoded(product_image(48, 64))
    target.write_bytes(data)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:  # until intake has seen it whole (its events came)
        intake.step()
        entry = intake.settling.get(target)
        if entry is not None and entry.size == len(data):
            break
        time.sleep(0.05)
    assert entry is not None and not entry.renamed
    intake.step()  # complete, trailer and all, but not stable for stable_ms yet
    assert _paths(engine) == []
    assert intake.settling[target].renamed is False
    intake.step(now=time.monotonic() + STABLE_MS / 1000 + 1)  # a minute later
    assert _paths(engine) == [str(target)]
    assert intake.arrivals == {Arrival.SETTLED: 1}


def test_a_renamed_file_written_into_again_waits_for_stability(
    tmp_path: Path, engine: Engine
) -> None:
    """Hints alone (no observer): a rename, then a write in place on the same path."""
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    config = IntakeConfig(stable_ms=STABLE_MS, settle_timeout_s=600, rescan_interval_s=3600)
    intake = Intake(engine, [camera], config)
    intake.next_scan = time.monotonic() + 3600
    target = camera.root / "d.png"
    target.write_bytes(encoded(product_image(48, 64)))
    intake.offer(target, camera, renamed=True)
    intake.offer(target, camera)  # a modified event after the rename: written in place
    intake.step()
    assert _paths(engine) == []
    intake.step(now=time.monotonic() + STABLE_MS / 1000 + 1)
    assert intake.arrivals == {Arrival.SETTLED: 1}


def test_the_observer_hears_no_reads_of_the_camera_files(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon reads each camera file three times (its trailer, its hash, its
    inspection): the observer asks only for the events intake acts on, so none of those
    reads comes back as an event to handle. The reads come first and a rename after, so
    the rename's event arriving means every earlier event has arrived too."""
    heard: list[str] = []
    real = intake_module._Events.on_any_event

    def listening(self: intake_module._Events, event: FileSystemEvent) -> None:
        heard.append(event.event_type)
        real(self, event)

    monkeypatch.setattr(intake_module._Events, "on_any_event", listening)
    camera = Camera("cam", tmp_path / "cam", "bolt")
    camera.root.mkdir()
    (camera.root / "a.png").write_bytes(encoded(product_image(48, 64)))
    config = IntakeConfig(stable_ms=STABLE_MS, settle_timeout_s=600, rescan_interval_s=3600)
    intake = Intake(engine, [camera], config)
    intake.start_observer()
    try:
        for _ in range(3):
            (camera.root / "a.png").read_bytes()
        staging = tmp_path / "staging"
        staging.mkdir()
        (staging / "b.png").write_bytes(encoded(product_image(48, 64)))
        os.rename(staging / "b.png", camera.root / "b.png")
        deadline = time.monotonic() + WAIT_S
        while "moved" not in heard and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        intake.stop_observer()
    assert heard == ["moved"]
