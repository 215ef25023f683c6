"""The plant outbox on a real SQLite file and a PostgreSQL server the test owns: changes
captured in the writing transaction, forwarded by natural keys, a batch written twice
(a crash between the plant's commit and the outbox's acknowledgement) adding nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import Cooldown
from padformer_edge.daemon.forwarder import Forwarder
from padformer_edge.store.candidates import decide
from padformer_edge.store.drift import acknowledge_drift, record_drift
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import downgrade, migrate_on_start, upgrade
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.outbox import (
    TRIGGER_NAMES,
    acknowledge,
    backlog,
    disable_forwarding,
    enable_forwarding,
    installed_triggers,
    line_backlog,
    take,
)
from padformer_edge.store.plant import write_batch
from padformer_edge.store.queue import AlertRequest, mark_alert_failed, mark_alert_sent
from padformer_edge.store.reviews import save_review
from padformer_edge.store.tables import (
    alerts,
    drift_events,
    inspections,
    reference_candidates,
    review_history,
    reviews,
)
from padformer_edge.store.vocabulary import CandidateState
from tests.alerts.conftest import store_result, wait_until
from tests.pg_cluster import Cluster, own_cluster
from tests.store.test_candidates import _inspected, _picture

LINE = "press-3"
ALERTS = AlertsConfig(cooldown_s=0)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with own_cluster() as owned:
        yield owned


@pytest.fixture
def plant(cluster: Cluster) -> Iterator[Engine]:
    engine = with_line(open_engine(cluster.url), LINE)
    migrate_on_start(engine)
    yield engine
    with engine.begin() as conn:  # the next test starts from an empty plant
        tables = (reference_candidates, drift_events, alerts, review_history, reviews,
                  inspections)  # fmt: skip
        for table in tables:
            conn.execute(table.delete())
    engine.dispose()


@pytest.fixture
def line(tmp_path: Path) -> Iterator[Engine]:
    engine = with_line(open_engine(str(tmp_path / "results.sqlite3")), LINE)
    upgrade(engine)
    yield engine
    engine.dispose()


def _count(engine: Engine, table) -> int:
    with engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def _forward(line: Engine, plant: Engine) -> int:
    settled = 0
    while batch := take(line, 7):  # small batches: several transactions, in order
        write_batch(plant, batch)
        acknowledge(line, batch.outbox_ids)
        settled += len(batch)
    return settled


def test_without_a_plant_nothing_is_captured(line: Engine) -> None:
    store_result(line, ALERTS, Cooldown(0), "a.png")
    with line.connect() as conn:
        assert installed_triggers(conn) == set()
        assert backlog(conn) == {}
    enable_forwarding(line, "postgresql://plant")
    disable_forwarding(line)
    store_result(line, ALERTS, Cooldown(0), "b.png")
    with line.connect() as conn:
        assert installed_triggers(conn) == set(TRIGGER_NAMES)  # they stay, idle
        assert backlog(conn) == {}
    assert line_backlog(line) == 0


def test_downgrading_past_the_outbox_drops_every_capture_trigger(line: Engine) -> None:
    """A trigger left behind would name the dropped outbox in every later write."""
    enable_forwarding(line, "postgresql://plant")
    downgrade(line, "0009")
    with line.connect() as conn:
        assert installed_triggers(conn) == set()
    store_result(line, ALERTS, Cooldown(0), "after-downgrade.png")


def _raise_drift(line: Engine, inspection_id: int, camera: str = "cam-1") -> int:
    return record_drift(
        line, camera=camera, product="nut", kind="scores", statistic=0.61, p_value=0.0004,
        level=0.01, window_size=50, reason="scores moved", inspection_id=inspection_id,
        requests=[AlertRequest("log", {"kind": "drift"})],
    )  # fmt: skip


def test_drift_events_reach_the_plant_once_and_their_acknowledgement_follows(
    line: Engine, plant: Engine
) -> None:
    enable_forwarding(line, "postgresql://plant")
    inspection, _ = store_result(line, ALERTS, Cooldown(0), "window-end.png")
    assert _forward(line, plant) == 2  # the result and its alert
    opened = _raise_drift(line, inspection)
    closed = _raise_drift(line, inspection, camera="cam-2")
    acknowledge_drift(line, closed, by="ana")
    # 2 events raised, each with 1 alert, 1 acknowledged
    assert line_backlog(line) == 2 + 2 + 1

    batch = take(line, 100)
    assert len(batch.drift_events) == 2 and len(batch.inspections) == 1  # their parent
    write_batch(plant, batch)
    write_batch(plant, batch)  # the plant committed, the line died before acknowledging
    acknowledge(line, batch.outbox_ids)
    assert line_backlog(line) == 0
    assert (_count(plant, drift_events), _count(plant, alerts), _count(plant, inspections)) == (
        2, 3, 1
    )  # fmt: skip

    with line.connect() as conn:
        local = {r["camera"]: dict(r) for r in conn.execute(select(drift_events)).mappings()}
    with plant.connect() as conn:
        (plant_inspection,) = conn.execute(select(inspections.c.id)).scalars().all()
        remote = {r["camera"]: dict(r) for r in conn.execute(select(drift_events)).mappings()}
    for camera in ("cam-1", "cam-2"):  # every value as the line has it but the two ids
        assert _without_ids(remote[camera]) == _without_ids(local[camera])
        assert remote[camera]["inspection_id"] == plant_inspection
    assert local["cam-1"]["id"] == opened and remote["cam-1"]["acknowledged_at"] is None
    assert remote["cam-2"]["acknowledged_by"] == "ana"

    with plant.begin() as conn:  # acknowledged on the plant (``alerts ack`` there)
        conn.execute(drift_events.update().where(drift_events.c.camera == "cam-1")
                     .values(acknowledged_at=func.now(), acknowledged_by="cy"))  # fmt: skip
    write_batch(plant, batch)  # the line's open copy sent again takes nothing back
    with plant.connect() as conn:
        by = conn.execute(select(drift_events.c.acknowledged_by).order_by(drift_events.c.camera))
        assert by.scalars().all() == ["cy", "ana"]

    acknowledge_drift(line, opened, by="ben")  # later, on the line: the same row closes
    assert _forward(line, plant) == 1
    with plant.connect() as conn:
        (by,) = conn.execute(
            select(drift_events.c.acknowledged_by).where(drift_events.c.camera == "cam-1")
        ).one()
    assert by == "ben" and _count(plant, drift_events) == 2


def test_reference_candidates_reach_the_plant_once_and_decisions_follow(
    line: Engine, plant: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A false-alarm review on the line makes a candidate (a copy of its picture in the
    line's state folder); the plant gets it once, by (product, picture), under the
    plant's id of its inspection. A decision follows whichever side took it last: the
    line's pending copy sent again takes back none made on the plant."""
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    enable_forwarding(line, "postgresql://plant")
    inspection = _inspected(line, _picture(tmp_path / "camera" / "a.png", 0), score=2.5)
    made = save_review(line, inspection, ReviewVerdict.false_alarm, reviewer="ann").candidate
    assert made is not None
    batch = take(line, 100)
    assert len(batch.candidates) == 1 and [r["id"] for r in batch.inspections] == [inspection]
    write_batch(plant, batch)
    write_batch(plant, batch)  # the plant committed, the line died before acknowledging
    acknowledge(line, batch.outbox_ids)
    assert line_backlog(line) == 0 and _count(plant, reference_candidates) == 1
    with line.connect() as conn:
        local = dict(conn.execute(select(reference_candidates)).mappings().one())
    with plant.connect() as conn:
        (plant_inspection,) = conn.execute(select(inspections.c.id)).scalars().all()
        remote = dict(conn.execute(select(reference_candidates)).mappings().one())
    assert _without_ids(remote) == _without_ids(local)  # every value as the line has it
    assert remote["inspection_id"] == plant_inspection

    with plant.begin() as conn:  # rejected on the plant (``profile candidates`` there)
        conn.execute(reference_candidates.update().values(
            state=CandidateState.rejected, decided_at=func.now(), decided_by="cy"))  # fmt: skip
    write_batch(plant, batch)  # the line's pending copy again takes nothing back
    with plant.connect() as conn:
        rc = reference_candidates.c
        decided = conn.execute(select(rc.state, rc.decided_by)).all()
    assert [tuple(r) for r in decided] == [(CandidateState.rejected, "cy")]

    decide(line, [made], CandidateState.approved, "eve")  # later, on the line
    assert _forward(line, plant) == 1
    with plant.connect() as conn:
        remote = dict(conn.execute(select(reference_candidates)).mappings().one())
    assert (remote["state"], remote["decided_by"]) == (CandidateState.approved, "eve")
    assert _count(plant, reference_candidates) == 1


def _without_ids(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("id", "inspection_id")}


def test_results_reviews_and_alerts_reach_the_plant_once(line: Engine, plant: Engine) -> None:
    enable_forwarding(line, "postgresql://plant")
    enable_forwarding(line, "postgresql://plant")  # a restart: nothing doubles
    stored = [store_result(line, ALERTS, Cooldown(0), f"{i}.png") for i in range(5)]
    first, alerted = stored[0]
    assert alerted == 1  # the log sink
    save_review(line, first, ReviewVerdict.false_alarm, reviewer="ana")
    save_review(line, first, ReviewVerdict.true_defect, reviewer="ben", note="crack")
    with line.connect() as conn:
        alert_ids = [row.id for row in conn.execute(select(alerts.c.id)).all()]
    mark_alert_sent(line, alert_ids[0])
    mark_alert_failed(line, alert_ids[1], "timeout", max_attempts=5)  # no state change
    # 5 results, 5 alerts created, 1 settled, 2 reviews (insert, update), 2 history rows
    assert line_backlog(line) == 5 + 5 + 1 + 2 + 2

    batch = take(line, 100)
    write_batch(plant, batch)
    write_batch(plant, batch)  # the plant committed, the line died before acknowledging
    acknowledge(line, batch.outbox_ids)
    assert line_backlog(line) == 0
    assert _forward(line, plant) == 0

    assert _count(plant, inspections) == 5
    assert _count(plant, alerts) == 5
    assert _count(plant, reviews) == 1
    assert _count(plant, review_history) == 2
    with plant.connect() as conn:
        plant_rows = conn.execute(select(inspections)).mappings().all()
        review = conn.execute(select(reviews)).mappings().one()
        states = sorted(row.state.value for row in conn.execute(select(alerts.c.state)).all())
    with line.connect() as conn:
        local_rows = conn.execute(select(inspections)).mappings().all()
    columns = [c.name for c in inspections.c if c.name != "id"]
    assert sorted(tuple(r[c] for c in columns) for r in plant_rows) == sorted(
        tuple(r[c] for c in columns) for r in local_rows
    )
    assert {r["line"] for r in plant_rows} == {LINE}
    assert (review["verdict"].value, review["reviewer"], review["note"]) == (
        "true_defect", "ben", "crack"
    )  # fmt: skip
    assert states == ["pending"] * 4 + ["sent"]


def test_a_later_change_after_a_forward_updates_the_same_rows(line: Engine, plant: Engine) -> None:
    enable_forwarding(line, "postgresql://plant")
    inspection, _ = store_result(line, ALERTS, Cooldown(0), "x.png")
    assert _forward(line, plant) == 2
    save_review(line, inspection, ReviewVerdict.true_defect, reviewer="ana")
    with line.connect() as conn:
        (alert_id,) = conn.execute(select(alerts.c.id)).scalars().all()
    mark_alert_sent(line, alert_id)
    # the review's inspection is sent again with it: harmless, and no second row
    assert _forward(line, plant) == 3
    assert (_count(plant, inspections), _count(plant, alerts), _count(plant, reviews)) == (1, 1, 1)
    with plant.connect() as conn:
        assert conn.execute(select(alerts.c.state)).scalar_one().value == "sent"


def test_the_forwarder_keeps_a_refused_change_until_the_plant_takes_it(
    line: Engine, plant: Engine, cluster: Cluster
) -> None:
    enable_forwarding(line, cluster.url)
    store_result(line, ALERTS, Cooldown(0), "refused.png")
    refuse = "ALTER TABLE inspections ADD CONSTRAINT refuse_cam_1 CHECK (camera <> 'cam-1')"
    with plant.begin() as conn:
        conn.execute(text(refuse))
    forwarder = Forwarder(line, cluster.url)
    forwarder.start()
    try:
        wait_until(lambda: forwarder.refused, "the plant refusing the change")
        assert forwarder.last_error is not None and "refuse_cam_1" in forwarder.last_error
        assert "plant database failing writes since" in forwarder.status()
        assert "2 change(s) waiting" in forwarder.status()
        assert _count(plant, inspections) == 0
        with plant.begin() as conn:
            conn.execute(text("ALTER TABLE inspections DROP CONSTRAINT refuse_cam_1"))
        wait_until(lambda: line_backlog(line) == 0, "the backlog forwarded")
    finally:
        forwarder.stop()
    assert (_count(plant, inspections), _count(plant, alerts)) == (1, 1)
    assert forwarder.status() == "plant backlog 0" and not forwarder.refused


def test_the_forwarder_writes_nothing_while_the_line_is_not_claimed_in_the_plant(
    line: Engine, plant: Engine, cluster: Cluster
) -> None:
    """Another PC may hold the line in the plant (``daemon.claim_keeper``): until this daemon's
    claim there is current the forwarder leaves the plant alone and keeps the backlog."""
    enable_forwarding(line, cluster.url)
    store_result(line, ALERTS, Cooldown(0), "unclaimed.png")
    asked = threading.Semaphore(0)
    claimed = threading.Event()

    def claim_current() -> bool:
        asked.release()
        return claimed.is_set()

    forwarder = Forwarder(line, cluster.url, claim_current)
    forwarder.start()
    try:
        for _ in range(3):  # three passes of its loop, each finding the claim not held
            assert asked.acquire(timeout=60)
        assert "waiting for line press-3's claim in the plant database" in forwarder.status()
        assert "2 change(s) waiting" in forwarder.status()
        assert _count(plant, inspections) == 0 and forwarder.forwarded == 0
        claimed.set()
        wait_until(lambda: line_backlog(line) == 0, "the backlog forwarded once claimed")
    finally:
        forwarder.stop()
    assert (_count(plant, inspections), _count(plant, alerts)) == (1, 1)
