"""The daemon's queue operations, on every configured backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from padformer_edge.store.models import Alert, AlertState, Inspection, Status
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    QueuedFile,
    claim_batch,
    complete,
    complete_many,
    due_alerts,
    enqueue,
    enqueue_ids,
    enqueue_many,
    fail,
    mark_alert_failed,
    mark_alert_sent,
    requeue_interrupted,
    skip,
)

from .seed import digest


def _enqueue(engine: Engine, name: str, content: str | None = None) -> Inspection:
    return enqueue(
        engine,
        camera="cam",
        product="bolt",
        source_path=f"/cams/{name}",
        sha256=digest(content or name),
        size_bytes=10,
    )


def _outcome(score: float, alerts: list[AlertRequest] | None = None) -> DetectionOutcome:
    return DetectionOutcome(
        score=score,
        threshold=1.0,
        heatmap_path="/heat/1.png",
        model_sha256=digest("m"),
        detect_ms=42.0,
        alerts=alerts or [],
    )


def _count(engine: Engine, model: type) -> int:
    with Session(engine) as session:
        return session.scalar(select(func.count()).select_from(model))


def test_enqueue_is_idempotent_per_path_and_content(engine: Engine) -> None:
    first = _enqueue(engine, "a.png")
    again = _enqueue(engine, "a.png")
    assert again.id == first.id and again.status == Status.pending
    changed = _enqueue(engine, "a.png", content="rewritten")  # same path, new content
    assert changed.id != first.id
    assert _count(engine, Inspection) == 2


def test_claim_takes_oldest_pending_and_counts_attempts(engine: Engine) -> None:
    ids = [_enqueue(engine, f"{i}.png").id for i in range(5)]
    batch = claim_batch(engine, 3)
    assert [r.id for r in batch] == ids[:3]
    assert all(r.status == Status.processing and r.attempts == 1 for r in batch)
    assert all(r.started_at is not None and r.started_at.tzinfo is not None for r in batch)
    assert [r.id for r in claim_batch(engine, 10)] == ids[3:]
    assert claim_batch(engine, 10) == []


def test_a_claim_asking_for_a_full_batch_takes_none_of_a_shorter_queue(engine: Engine) -> None:
    ids = [_enqueue(engine, f"{i}.png").id for i in range(3)]
    assert claim_batch(engine, 4, fair=True, at_least=4) == []  # three wait: none taken
    with Session(engine) as session:  # and none was moved to processing
        statuses = session.scalars(select(Inspection.status)).all()
    assert statuses == [Status.pending] * 3
    row = _enqueue(engine, "3.png")
    taken = claim_batch(engine, 4, fair=True, at_least=4)
    assert [r.id for r in taken] == [*ids, row.id]
    assert all(r.status == Status.processing and r.attempts == 1 for r in taken)


def test_complete_writes_result_and_alerts_together(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    claim_batch(engine, 1)
    done = complete(engine, row.id, _outcome(3.0, [AlertRequest("mqtt", {"score": 3.0})]))
    assert done.status == Status.done and done.is_anomaly is True
    assert done.queue_ms is not None and done.queue_ms >= 0
    (alert,) = due_alerts(engine)
    assert alert.inspection_id == row.id and alert.state == AlertState.pending


def test_complete_that_fails_leaves_no_partial_result(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    claim_batch(engine, 1)
    unserialisable = [AlertRequest("mqtt", {"when": datetime.now(UTC)})]
    with pytest.raises(TypeError):
        complete(engine, row.id, _outcome(3.0, unserialisable))
    with Session(engine) as session:
        assert session.get(Inspection, row.id).status == Status.processing
    assert _count(engine, Alert) == 0


def test_complete_refuses_a_row_that_is_not_processing(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    with pytest.raises(ValueError, match="pending"):
        complete(engine, row.id, _outcome(0.5))
    with pytest.raises(LookupError):
        complete(engine, 999, _outcome(0.5))


def test_fail_retries_until_attempts_run_out(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    for attempt in (1, 2):
        claim_batch(engine, 1)
        again = fail(engine, row.id, f"decode error {attempt}", max_attempts=3)
        assert again.status == Status.pending and again.error == f"decode error {attempt}"
    claim_batch(engine, 1)
    final = fail(engine, row.id, "decode error 3", max_attempts=3)
    assert final.status == Status.failed and final.attempts == 3 and final.finished_at


def test_skip_closes_a_row_with_its_reason(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    skipped = skip(engine, row.id, "no references for bolt")
    assert skipped.status == Status.skipped and skipped.error == "no references for bolt"
    with pytest.raises(ValueError, match="skipped"):
        skip(engine, row.id, "twice")


def test_requeue_interrupted_rows_on_start(engine: Engine) -> None:
    fresh, poison = _enqueue(engine, "fresh.png"), _enqueue(engine, "poison.png")
    claim_batch(engine, 2)
    assert requeue_interrupted(engine, max_attempts=2) == (2, 0)
    claim_batch(engine, 2)  # second attempt for both; the daemon "dies" again
    complete(engine, fresh.id, _outcome(0.1))
    assert requeue_interrupted(engine, max_attempts=2) == (0, 1)
    with Session(engine) as session:
        assert session.get(Inspection, poison.id).status == Status.failed
        assert session.get(Inspection, fresh.id).status == Status.done


def test_alert_delivery_backs_off_then_dies(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    claim_batch(engine, 1)
    complete(engine, row.id, _outcome(5.0, [AlertRequest("mqtt", {}), AlertRequest("http", {})]))
    mqtt, http = due_alerts(engine)
    assert mark_alert_sent(engine, http.id).state == AlertState.sent
    before = datetime.now(UTC)
    retry = mark_alert_failed(engine, mqtt.id, "broker down", max_attempts=3, base_delay_s=10)
    assert retry.state == AlertState.pending and retry.attempts == 1
    assert retry.next_attempt_at >= before + timedelta(seconds=10)
    assert due_alerts(engine) == []  # not due until the delay passes
    later = due_alerts(engine, now=before + timedelta(seconds=11))
    assert [a.id for a in later] == [mqtt.id]
    second = mark_alert_failed(engine, mqtt.id, "broker down", max_attempts=3, base_delay_s=10)
    assert second.next_attempt_at >= before + timedelta(seconds=20)  # doubled
    dead = mark_alert_failed(engine, mqtt.id, "broker down", max_attempts=3)
    assert dead.state == AlertState.dead and dead.last_error == "broker down"
    assert due_alerts(engine, now=before + timedelta(days=1)) == []


def test_fair_claim_takes_cameras_in_turn(engine: Engine) -> None:
    def add(camera: str, name: str) -> int:
        return enqueue(
            engine,
            camera=camera,
            product="bolt",
            source_path=f"/{camera}/{name}",
            sha256=digest(camera + name),
            size_bytes=1,
        ).id

    burst = [add("a", f"{i}.png") for i in range(4)]  # camera a floods first
    late = [add("b", "0.png"), add("c", "0.png")]
    first = claim_batch(engine, 3, fair=True)
    assert {r.camera for r in first} == {"a", "b", "c"}
    assert [r.id for r in first] == [burst[0], *late]
    assert [r.id for r in claim_batch(engine, 10, fair=True)] == burst[1:]


def test_skip_queues_its_alerts_in_the_same_transaction(engine: Engine) -> None:
    row = _enqueue(engine, "a.png")
    skip(engine, row.id, "older than the deadline", [AlertRequest("log", {"why": "overload"})])
    with Session(engine) as session:
        alerts = session.scalars(select(Alert)).all()
    assert [(a.inspection_id, a.sink, a.state) for a in alerts] == [
        (row.id, "log", AlertState.pending)
    ]


def test_a_batch_completes_whole_or_not_at_all(engine: Engine) -> None:
    """The worker's batch: every result and alert in one transaction; a row that is not
    ``processing`` any more refuses the whole batch, and nothing of it is written."""
    rows = [_enqueue(engine, f"{i}.png") for i in range(3)]
    claimed = claim_batch(engine, 3)
    alert = AlertRequest(sink="log", payload={"kind": "anomaly"})
    done = complete_many(engine, [(claimed[0].id, _outcome(2.0, [alert])),
                                  (claimed[1].id, _outcome(0.5))])  # fmt: skip
    assert [r.status for r in done] == [Status.done, Status.done]
    assert _count(engine, Alert) == 1
    with pytest.raises(ValueError, match="not processing"):
        complete_many(engine, [(claimed[2].id, _outcome(0.1)), (rows[0].id, _outcome(0.1))])
    with Session(engine) as session:
        assert session.get(Inspection, claimed[2].id).status == Status.processing
    assert _count(engine, Alert) == 1


def test_files_queued_together_are_queued_once_each(engine: Engine) -> None:
    files = [QueuedFile("cam", "bolt", f"/cams/{i}.png", digest(str(i)), 10) for i in range(3)]
    first = enqueue_many(engine, files)
    again = enqueue_many(engine, files[1:])  # a rescan meeting two of them again
    assert [r.id for r in again] == [r.id for r in first[1:]]
    assert [r.source_path for r in first] == [f.source_path for f in files]
    assert enqueue_ids(engine, files[::-1]) == [r.id for r in first[::-1]]  # ids alone
    assert _count(engine, Inspection) == 3
