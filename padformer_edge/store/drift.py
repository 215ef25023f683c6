"""Drift events in the history database: raised by the daemon with their alerts in one
transaction, listed while open, closed by an operator's acknowledgement.

An open event is what the page shows and what keeps the daemon from raising the same
camera's drift again at every window: one alert per drift, repeated only after someone
said they saw it and the drift is still there.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import Engine, insert, select, update

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.queue import AlertRequest
from padformer_edge.store.tables import alerts, drift_events, utc_now
from padformer_edge.store.vocabulary import AlertState

MAX_NAME_CHARS = 128


@dataclass(frozen=True)
class DriftEvent:
    """One drift as stored (``acknowledged_at`` is None while it is open)."""

    id: int
    line: str
    camera: str
    product: str
    kind: str
    statistic: float
    p_value: float
    level: float
    window_size: int
    reason: str
    inspection_id: int | None
    raised_at: datetime
    acknowledged_at: datetime | None = None
    acknowledged_by: str | None = None


def record_drift(
    engine: Engine,
    *,
    camera: str,
    product: str,
    kind: str,
    statistic: float,
    p_value: float,
    level: float,
    window_size: int,
    reason: str,
    inspection_id: int,
    requests: Sequence[AlertRequest],
) -> int:
    """Store a drift event and one outbox row per sink request (their payloads get the
    event's id as ``drift_id``), in one transaction, on the engine's line; returns the
    event's id."""
    now, line = utc_now(), line_of(engine)
    with engine.begin() as conn:
        drift_id = conn.execute(
            insert(drift_events).values(
                line=line, camera=camera, product=product, kind=kind, statistic=statistic,
                p_value=p_value, level=level, window_size=window_size, reason=reason,
                inspection_id=inspection_id, raised_at=now,
            ).returning(drift_events.c.id)
        ).scalar_one()  # fmt: skip
        for request in requests:
            payload = {**request.payload, "drift_id": drift_id}
            conn.execute(
                insert(alerts).values(
                    inspection_id=inspection_id, line=line, sink=request.sink,
                    payload=json.dumps(payload),
                    state=AlertState.pending, attempts=0, next_attempt_at=now, created_at=now,
                )
            )  # fmt: skip
    return int(drift_id)


def _event(row: object) -> DriftEvent:
    return DriftEvent(**{key: getattr(row, key) for key in DriftEvent.__dataclass_fields__})


def open_drift_events(engine: Engine, line: str | None = None) -> list[DriftEvent]:
    """Every drift not yet acknowledged, newest first (the page's banner); of ``line``
    only when given."""
    query = (
        select(drift_events)
        .where(drift_events.c.acknowledged_at.is_(None))
        .order_by(drift_events.c.id.desc())
    )
    if line is not None:
        query = query.where(drift_events.c.line == line)
    with reading(engine) as conn:
        return [_event(row) for row in conn.execute(query)]


def list_drift_events(
    engine: Engine, limit: int = 50, line: str | None = None
) -> list[DriftEvent]:
    """Drift events newest first, acknowledged or not; of ``line`` only when given."""
    query = select(drift_events).order_by(drift_events.c.id.desc()).limit(limit)
    if line is not None:
        query = query.where(drift_events.c.line == line)
    with reading(engine) as conn:
        return [_event(row) for row in conn.execute(query)]


def has_open_drift(engine: Engine, camera: str, product: str) -> bool:
    """True while ``camera`` of the engine's line has an unacknowledged drift event for
    ``product`` (camera names are a line's own: two lines may both have ``cam1``)."""
    query = select(drift_events.c.id).where(
        drift_events.c.line == line_of(engine),
        drift_events.c.camera == camera,
        drift_events.c.product == product,
        drift_events.c.acknowledged_at.is_(None),
    )
    with reading(engine) as conn:
        return conn.execute(query.limit(1)).first() is not None


def acknowledge_drift(engine: Engine, drift_id: int, by: str) -> DriftEvent:
    """Close drift event ``drift_id`` in ``by``'s name; a missing or already closed one is
    refused in one sentence and nothing changes."""
    by = by.strip()
    if not by or len(by) > MAX_NAME_CHARS:
        raise UserError(
            f"--by needs the name of who acknowledges the drift, 1 to {MAX_NAME_CHARS} "
            "characters."
        )
    with engine.begin() as conn:
        row = conn.execute(select(drift_events).where(drift_events.c.id == drift_id)).first()
        if row is None:
            raise UserError(
                f"there is no drift event {drift_id}; 'alerts drift' lists them with their ids."
            )
        if row.acknowledged_at is not None:
            raise UserError(
                f"drift event {drift_id} was already acknowledged by {row.acknowledged_by} "
                f"at {row.acknowledged_at.isoformat(timespec='seconds')}; nothing to do."
            )
        now = utc_now()
        conn.execute(
            update(drift_events)
            .where(drift_events.c.id == drift_id)
            .values(acknowledged_at=now, acknowledged_by=by)
        )
    return replace(_event(row), acknowledged_at=now, acknowledged_by=by)
