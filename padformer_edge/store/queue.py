"""The daemon's side of the store: the inspections table used as a durable work queue.

Every function but ``due_alerts`` (a read) is one short write transaction (``BEGIN
IMMEDIATE`` on SQLite), so a
crash at any point leaves each row in a state the next start knows how to resume:
``pending`` rows are claimed again, ``processing`` rows are requeued by
``requeue_interrupted``. A result and its alerts are committed together or not at all.

Each row carries the line of the engine that wrote it (``store.lines``), and a daemon
claims, requeues and delivers only its own line's rows: on a database several lines
share, another line's files are on another PC.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
    Insert,
    Integer,
    Select,
    Update,
    and_,
    bindparam,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from padformer_edge.anomaly import is_anomalous
from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.models import Alert, AlertState, Inspection, Status, utc_now


@dataclass(frozen=True)
class AlertRequest:
    """An alert to queue for ``sink`` with a JSON-serialisable payload."""

    sink: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class DetectionOutcome:
    """What the worker learnt about one image; ``queue_ms`` is derived from the row.

    Its verdict (``is_anomaly``) is decided here, once, when the result is made (the one
    rule, ``anomaly.is_anomalous``; a frame with no part is never an anomaly): the worker
    plans an anomaly's alerts from it, the store writes it and the log line shows it, so
    no two of them can disagree at the threshold.
    """

    score: float
    threshold: float
    heatmap_path: str | None
    model_sha256: str
    detect_ms: float
    alerts: Sequence[AlertRequest] = field(default_factory=tuple)
    profile_version: int | None = None
    """The version of the profile that scored the image (``profile.yaml``'s ``version``)."""
    no_part: bool = False
    """A framed profile found no part in the frame: stored as ``no_part``, with no score."""
    part_box: tuple[int, int, int, int] | None = None  # the crop scored, in frame pixels
    part_cut: bool | None = None  # the part ran off the frame's edge
    is_anomaly: bool = field(init=False)

    def __post_init__(self) -> None:
        verdict = not self.no_part and bool(is_anomalous(self.score, self.threshold))
        object.__setattr__(self, "is_anomaly", verdict)  # frozen: set once, here


def _session(engine: Engine) -> Session:
    # Rows handed back stay readable after the transaction closes.
    return Session(engine, expire_on_commit=False)


def enqueue(
    engine: Engine,
    *,
    camera: str,
    product: str,
    source_path: str,
    sha256: str,
    size_bytes: int,
    discovered_at: datetime | None = None,
    refused: str | None = None,
) -> Inspection:
    """Queue a file as ``pending``; the same path and content again returns the first row.

    Intake sees a file several times (events, then the reconciliation scan): an
    ``INSERT .. ON CONFLICT DO NOTHING`` makes that harmless even across processes.
    ``refused`` records a file intake already knows can never be inspected (a name that
    is not UTF-8) as ``failed`` with that reason, so the worker never claims it.
    """
    found = QueuedFile(camera, product, source_path, sha256, size_bytes, discovered_at, refused)
    return enqueue_many(engine, [found])[0]


@dataclass(frozen=True)
class QueuedFile:
    """One file for ``enqueue_many``: ``enqueue``'s arguments."""

    camera: str
    product: str
    source_path: str
    sha256: str
    size_bytes: int
    discovered_at: datetime | None = None
    refused: str | None = None


ENQUEUE_CHUNK = 500
"""Files per ``SELECT`` in ``enqueue_many``: their paths stay far below SQLite's limit on
a statement's parameters when a start-up scan queues thousands at once."""


def enqueue_many(engine: Engine, files: Sequence[QueuedFile]) -> list[Inspection]:
    """``enqueue`` for several files in one transaction; their rows in order, all of
    them or none (``enqueue_ids``, with each row loaded)."""
    with _session(engine) as session, session.begin():
        ids = _insert_queued(session.connection(), engine, files)
        loaded: dict[int, Inspection] = {}
        for start in range(0, len(ids), ENQUEUE_CHUNK):
            chunk = set(ids[start : start + ENQUEUE_CHUNK])
            query = select(Inspection).where(Inspection.id.in_(chunk))
            loaded.update((row.id, row) for row in session.scalars(query))
        return [loaded[i] for i in ids]


def enqueue_ids(engine: Engine, files: Sequence[QueuedFile]) -> list[int]:
    """The ids of ``enqueue_many``'s rows, none of them loaded: intake queues every file
    that settled in one step this way and needs no more than the ids (loading each row
    into an ORM object cost as much as queueing it)."""
    with engine.begin() as conn:
        return _insert_queued(conn, engine, files)


_QUEUED_IDS = select(
    Inspection.__table__.c.id,
    Inspection.__table__.c.source_path,
    Inspection.__table__.c.sha256,
).where(
    Inspection.__table__.c.line == bindparam("line"),
    Inspection.__table__.c.source_path.in_(bindparam("paths", expanding=True)),
)
"""The queued rows of a chunk's paths (``_insert_queued``), built once."""


def _insert_queued(conn: Connection, engine: Engine, files: Sequence[QueuedFile]) -> list[int]:
    """Queue ``files`` in ``conn``'s transaction; their rows' ids in order.

    One executemany ``INSERT .. ON CONFLICT DO NOTHING`` (a Core statement, compiled once
    for any number of files) and one ``SELECT`` of the ids per ``ENQUEUE_CHUNK`` files:
    an ORM statement pair per file was the largest part of intake's CPU on small images
    (``benchmarks/daemon_throughput.py --stored-maps --profile``)."""
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    line = line_of(engine)
    statement = dialect.insert(Inspection.__table__).on_conflict_do_nothing(
        index_elements=["line", "source_path", "sha256"]
    )
    ids: list[int] = []
    for start in range(0, len(files), ENQUEUE_CHUNK):
        chunk = files[start : start + ENQUEUE_CHUNK]
        conn.execute(statement, [_queued_values(found, line) for found in chunk])
        paths = sorted({found.source_path for found in chunk})
        stored = {
            (path, sha256): row_id
            for row_id, path, sha256 in conn.execute(_QUEUED_IDS, {"line": line, "paths": paths})
        }
        ids.extend(stored[found.source_path, found.sha256] for found in chunk)
    return ids


def _queued_values(found: QueuedFile, line: str) -> dict[str, Any]:
    """The new row's columns for ``found`` on ``line`` (every row the same keys: one
    executemany INSERT); a refused file is ``failed`` with its reason at once."""
    now = found.discovered_at or utc_now()
    refused = found.refused is not None
    return dict(
        line=line,
        camera=found.camera,
        product=found.product,
        source_path=found.source_path,
        sha256=found.sha256,
        size_bytes=found.size_bytes,
        status=Status.failed if refused else Status.pending,
        attempts=0,
        discovered_at=now,
        error=found.refused,
        finished_at=now if refused else None,
    )


def _claim_queries(fair: bool) -> tuple[Select, Update]:
    """``claim_batch``'s two statements, built once: their rows and values are bound per
    call (``line``, ``limit``; ``ids``, ``now``), since building the expressions cost as
    much as running them."""
    table = Inspection.__table__
    pending = and_(table.c.status == Status.pending, table.c.line == bindparam("line"))
    limit = bindparam("limit", type_=Integer)
    if fair:
        turn = func.row_number().over(partition_by=table.c.camera, order_by=table.c.id)
        ranked = select(table.c.id, turn.label("turn")).where(pending).subquery()
        chosen = select(ranked.c.id).order_by(ranked.c.turn, ranked.c.id).limit(limit)
        query = select(table).where(table.c.id.in_(chosen), pending)
    else:
        query = select(table).where(pending).order_by(table.c.id).limit(limit)
    claim = (
        update(table)
        .where(table.c.id.in_(bindparam("ids", expanding=True)))
        .values(
            status=Status.processing,
            attempts=table.c.attempts + 1,
            started_at=bindparam("now", type_=table.c.started_at.type),
            error=None,
        )
    )
    return query.with_for_update(skip_locked=True), claim


_CLAIM_QUERIES = {fair: _claim_queries(fair) for fair in (False, True)}


def claim_batch(
    engine: Engine, limit: int, *, fair: bool = False, at_least: int = 1
) -> list[Inspection]:
    """Move up to ``limit`` oldest pending rows to ``processing`` and return them; none
    while fewer than ``at_least`` are pending (the worker claims a batch ahead only
    while a full one waits: one transaction, where counting first took another).

    ``fair`` takes them round-robin over cameras (each camera's oldest, then each one's
    second oldest, ...), so one camera's burst cannot starve the others. Two Core
    statements, the rows built from what they read: the ORM's loading of each row into a
    session and its flush of each change cost more than the two queries.
    """
    now = utc_now()
    query, claim = _CLAIM_QUERIES[fair]
    with engine.begin() as conn:
        found = conn.execute(query, {"line": line_of(engine), "limit": limit}).mappings().all()
        if not found or len(found) < at_least:
            return []
        conn.execute(claim, {"ids": [row["id"] for row in found], "now": now})
    claimed = {"status": Status.processing, "started_at": now, "error": None}
    return [
        Inspection(**{**row, **claimed, "attempts": row["attempts"] + 1})
        for row in sorted(found, key=lambda row: row["id"])
    ]


def _processing(session: Session, inspection_id: int) -> Inspection:
    row = session.get(Inspection, inspection_id, with_for_update=True)
    _still_processing(None if row is None else row.status, inspection_id)
    assert row is not None
    return row


def _still_processing(status: Status | None, inspection_id: int) -> None:
    """Nothing when the row's ``status`` (None: there is no such row) is ``processing``;
    else the error that says which not."""
    if status is None:
        raise LookupError(f"inspection {inspection_id} does not exist")
    if status != Status.processing:
        raise ValueError(f"inspection {inspection_id} is {status.value}, not processing")


def complete(engine: Engine, inspection_id: int, outcome: DetectionOutcome) -> Inspection:
    """Store a result and queue its alerts in one transaction."""
    return complete_many(engine, [(inspection_id, outcome)])[0]


def _complete_statements() -> tuple[Select, Update, Insert]:
    """``complete_many``'s three statements, built once with bound values: the batch's
    rows read under lock, each result written by id, and the alerts queued."""
    table, alerts = Inspection.__table__, Alert.__table__
    read = select(table).where(table.c.id.in_(bindparam("ids", expanding=True)))
    write = (
        update(table)
        .where(table.c.id == bindparam("row_id"))
        .values({name: bindparam(name, type_=table.c[name].type) for name in _RESULT_COLUMNS})
    )
    return read.with_for_update(), write, insert(alerts)


_RESULT_COLUMNS = (
    "status", "finished_at", "error", "score", "threshold", "is_anomaly", "heatmap_path",
    "model_sha256", "profile_version", "detect_ms", "queue_ms", "part_box", "part_cut",
)  # fmt: skip
"""The columns a result sets (``complete_many``)."""
_COMPLETE = _complete_statements()


def complete_many(
    engine: Engine, results: Sequence[tuple[int, DetectionOutcome]], *, rows: bool = True
) -> list[Inspection]:
    """Store several results and queue their alerts in one transaction: all of them or,
    when any row is not ``processing`` (or the database fails), none. The worker commits
    a batch this way: on small images a transaction per image was among the largest
    host-side costs (``benchmarks/daemon_throughput.py --stored-maps --profile``). Three
    Core statements (the rows read under lock, the results written by id, the alerts
    inserted), the rows handed back built from what was read and written: an ORM
    session's loading and flush of each row cost more than the statements. ``rows``
    False: nothing is handed back (the worker reads none of them, and building each
    ORM object costs more than writing its row)."""
    now = utc_now()
    read, write, queue_alerts = _COMPLETE
    with engine.begin() as conn:
        found = {
            row["id"]: row
            for row in conn.execute(read, {"ids": [i for i, _ in results]}).mappings()
        }
        done, written, alerts = [], [], []
        for inspection_id, outcome in results:
            row = found.get(inspection_id)
            _still_processing(None if row is None else row["status"], inspection_id)
            assert row is not None
            started = row["started_at"]
            box = outcome.part_box
            values = {
                "status": Status.no_part if outcome.no_part else Status.done,
                "finished_at": now, "error": None,
                "score": None if outcome.no_part else outcome.score,
                "threshold": outcome.threshold,
                "is_anomaly": None if outcome.no_part else outcome.is_anomaly,
                "heatmap_path": outcome.heatmap_path,
                "part_box": None if box is None else ",".join(map(str, box)),
                "part_cut": outcome.part_cut,
                "model_sha256": outcome.model_sha256,
                "profile_version": outcome.profile_version, "detect_ms": outcome.detect_ms,
                "queue_ms": row["queue_ms"] if started is None
                else (started - row["discovered_at"]) / timedelta(milliseconds=1),
            }  # fmt: skip
            written.append({"row_id": inspection_id, **values})
            alerts.extend(_alert_values(inspection_id, row["line"], outcome.alerts, now))
            if rows:
                done.append(Inspection(**{**row, **values}))
        conn.execute(write, written)
        if alerts:
            conn.execute(queue_alerts, alerts)
        return done


def _alert_values(
    inspection_id: int, line: str, alerts: Sequence[AlertRequest], now: datetime
) -> list[dict[str, Any]]:
    """The outbox rows of ``alerts`` as column values (``complete_many``'s insert)."""
    return [
        {
            "inspection_id": inspection_id,
            "line": line,
            "sink": a.sink,
            "payload": json.dumps(a.payload),
            "state": AlertState.pending,
            "attempts": 0,
            "next_attempt_at": now,
            "created_at": now,
        }
        for a in alerts
    ]


def _outbox(row: Inspection, alerts: Sequence[AlertRequest], now: datetime) -> list[Alert]:
    return [Alert(**values) for values in _alert_values(row.id, row.line, alerts, now)]


def fail(engine: Engine, inspection_id: int, reason: str, *, max_attempts: int) -> Inspection:
    """Record a failed attempt: back to ``pending`` for another try, or ``failed`` for good."""
    with _session(engine) as session, session.begin():
        row = _processing(session, inspection_id)
        row.error = reason
        if row.attempts >= max_attempts:
            row.status, row.finished_at = Status.failed, utc_now()
        else:
            row.status, row.started_at = Status.pending, None
        return row


def skip(
    engine: Engine, inspection_id: int, reason: str, alerts: Sequence[AlertRequest] = ()
) -> Inspection:
    """Close a row that will not be inspected (the worker's overload deadline passed)
    and queue its operator alerts in the same transaction."""
    now = utc_now()
    with _session(engine) as session, session.begin():
        row = session.get(Inspection, inspection_id, with_for_update=True)
        if row is None:
            raise LookupError(f"inspection {inspection_id} does not exist")
        if row.status not in (Status.pending, Status.processing):
            raise ValueError(f"inspection {inspection_id} is already {row.status.value}")
        row.status, row.error, row.finished_at = Status.skipped, reason, now
        session.add_all(_outbox(row, alerts, now))
        return row


def requeue_interrupted(engine: Engine, *, max_attempts: int) -> tuple[int, int]:
    """On start: rows a previous run left ``processing`` go back to ``pending``.

    A row whose attempts are already used up becomes ``failed`` instead, so an image
    that crashes the daemon itself cannot put it into a restart loop. Only the engine's
    line's rows: another line's ``processing`` rows are another live daemon's work.
    Returns (requeued, failed).
    """
    base = update(Inspection).where(
        Inspection.status == Status.processing, Inspection.line == line_of(engine)
    )
    with _session(engine) as session, session.begin():
        failed = session.execute(
            base.where(Inspection.attempts >= max_attempts).values(
                status=Status.failed,
                finished_at=utc_now(),
                error="interrupted while processing on every attempt",
            )
        ).rowcount
        requeued = session.execute(base.values(status=Status.pending, started_at=None)).rowcount
    return requeued, failed


def due_alerts(engine: Engine, *, limit: int = 100, now: datetime | None = None) -> list[Alert]:
    """The engine's line's pending alerts whose next attempt is due, oldest first (a
    read: no write lock); another line's alerts are its own daemon's to send."""
    with reading(engine) as conn, Session(conn, expire_on_commit=False) as session:
        return list(
            session.scalars(
                select(Alert)
                .where(
                    Alert.state == AlertState.pending,
                    Alert.line == line_of(engine),
                    Alert.next_attempt_at <= (now or utc_now()),
                )
                .order_by(Alert.next_attempt_at, Alert.id)
                .limit(limit)
            )
        )


def _alert(session: Session, alert_id: int) -> Alert:
    alert = session.get(Alert, alert_id, with_for_update=True)
    if alert is None:
        raise LookupError(f"alert {alert_id} does not exist")
    return alert


def mark_alert_sent(engine: Engine, alert_id: int) -> Alert:
    with _session(engine) as session, session.begin():
        alert = _alert(session, alert_id)
        alert.state, alert.sent_at = AlertState.sent, utc_now()
        alert.attempts += 1
        return alert


def mark_alert_failed(
    engine: Engine,
    alert_id: int,
    error: str,
    *,
    max_attempts: int,
    base_delay_s: float = 5.0,
    max_delay_s: float = 3600.0,
) -> Alert:
    """Count a failed delivery; retry after an exponential delay, or give up as ``dead``.

    The delay doubles per attempt and is capped, so a sink that is down for an hour is
    not hammered, and one back up is retried within ``max_delay_s``.
    """
    with _session(engine) as session, session.begin():
        alert = _alert(session, alert_id)
        alert.attempts += 1
        alert.last_error = error
        if alert.attempts >= max_attempts:
            alert.state = AlertState.dead
        else:
            delay = min(base_delay_s * 2 ** (alert.attempts - 1), max_delay_s)
            alert.next_attempt_at = utc_now() + timedelta(seconds=delay)
        return alert
