"""The line's side of forwarding to a plant database: what changed, captured atomically.

A line PC keeps its queue, results and alerts in its own SQLite file; with a plant
database configured, every change the plant must see (a finished result, a review, a
review history entry, an alert created or settled, a drift event raised or acknowledged,
a reference candidate proposed or decided)
also leaves a row in ``plant_outbox`` naming the changed row. The row is written by a
SQLite trigger, inside the transaction that made the change: a change committed is a
change owed to the plant, whatever kills the process a moment later, and none of the
many writers (the worker, intake, the dispatcher, the page's reviews, the CLI, the
drift watch) has to remember to queue it.

The triggers fire only for lines listed in ``plant_forwarding``, which a forwarding
daemon fills at start (``enable_forwarding``) and a daemon without a plant empties
(``disable_forwarding``): a line PC with no plant keeps no outbox. They are created by
the daemon, not by a migration, because SQLite drops a table's triggers when a batch
migration rebuilds the table; the daemon migrates first, then (re)creates them.

An outbox row is deleted (``acknowledge``) only after the plant database committed the
change (``store.plant``), so the outbox is also the backlog a page and ``/metrics``
show while the plant database is away.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from sqlalchemy import Connection, Engine, delete, func, select, text
from sqlalchemy.dialects import sqlite

from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.tables import (
    alerts,
    drift_events,
    inspections,
    plant_forwarding,
    plant_outbox,
    reference_candidates,
    review_history,
    reviews,
    utc_now,
)

Kind = Literal["inspection", "review", "review_history", "alert", "drift_event", "candidate"]
FINAL_STATUSES = "('done', 'failed', 'skipped')"
_FORWARDING = "EXISTS (SELECT 1 FROM plant_forwarding WHERE line = NEW.line)"

# name: (event, condition, kind, the changed row's local id)
_TRIGGERS: dict[str, tuple[str, str, Kind, str]] = {
    # a file refused at intake is inserted already failed
    "plant_outbox_inspection_insert": (
        "AFTER INSERT ON inspections",
        f"NEW.status IN {FINAL_STATUSES}",
        "inspection",
        "NEW.id",
    ),
    "plant_outbox_inspection_update": (
        "AFTER UPDATE OF status ON inspections",
        f"NEW.status IN {FINAL_STATUSES}",
        "inspection",
        "NEW.id",
    ),
    "plant_outbox_review_insert": ("AFTER INSERT ON reviews", "1", "review", "NEW.inspection_id"),
    "plant_outbox_review_update": ("AFTER UPDATE ON reviews", "1", "review", "NEW.inspection_id"),
    "plant_outbox_review_history_insert": (
        "AFTER INSERT ON review_history",
        "1",
        "review_history",
        "NEW.id",
    ),
    "plant_outbox_alert_insert": ("AFTER INSERT ON alerts", "1", "alert", "NEW.id"),
    # settled (sent or dead): a retry's attempt count alone is not the plant's business
    "plant_outbox_alert_update": ("AFTER UPDATE OF state ON alerts", "1", "alert", "NEW.id"),
    "plant_outbox_drift_insert": ("AFTER INSERT ON drift_events", "1", "drift_event", "NEW.id"),
    "plant_outbox_drift_update": (
        "AFTER UPDATE OF acknowledged_at ON drift_events",
        "1",
        "drift_event",
        "NEW.id",
    ),
    "plant_outbox_candidate_insert": (
        "AFTER INSERT ON reference_candidates",
        "1",
        "candidate",
        "NEW.id",
    ),
    # decided, withdrawn, or decided again
    "plant_outbox_candidate_update": (
        "AFTER UPDATE OF state, decided_at, decided_by, note ON reference_candidates",
        "1",
        "candidate",
        "NEW.id",
    ),
}
TRIGGER_NAMES = tuple(_TRIGGERS)


def _trigger_sql(name: str) -> str:
    event, condition, kind, row_id = _TRIGGERS[name]
    return (
        f"CREATE TRIGGER IF NOT EXISTS {name} {event} "
        f"WHEN ({condition}) AND {_FORWARDING} BEGIN "
        f"INSERT INTO plant_outbox (line, kind, row_id) VALUES (NEW.line, '{kind}', {row_id}); "
        "END"
    )


def _require_sqlite(engine: Engine) -> None:
    if engine.dialect.name != "sqlite":
        raise ValueError("the plant outbox lives in a line's SQLite database")


def enable_forwarding(engine: Engine, plant: str) -> None:
    """Capture the engine's line's changes from now on (``plant`` names the database
    they go to, for a reader of this file); the triggers are (re)created if missing."""
    _require_sqlite(engine)
    row = {"line": line_of(engine), "plant": plant, "since": utc_now()}
    insert = sqlite.insert(plant_forwarding).values(**row)
    with engine.begin() as conn:
        for name in _TRIGGERS:
            conn.exec_driver_sql(_trigger_sql(name))
        conn.execute(insert.on_conflict_do_update(index_elements=["line"], set_={"plant": plant}))


def disable_forwarding(engine: Engine) -> None:
    """Stop capturing the engine's line's changes (a daemon started without a plant);
    changes already captured stay in the outbox until a forwarding daemon sends them."""
    if engine.dialect.name != "sqlite":
        return
    with engine.begin() as conn:
        conn.execute(delete(plant_forwarding).where(plant_forwarding.c.line == line_of(engine)))


def installed_triggers(conn: Connection) -> set[str]:
    """The capture triggers the database holds (a test's and ``doctor``'s check)."""
    rows = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).all()
    return {name for (name,) in rows} & set(_TRIGGERS)


@dataclass
class Batch:
    """Outbox rows taken together, and the local rows they name, read in one snapshot.

    ``inspections`` holds every inspection the batch touches, the parents of its reviews,
    alerts, drift events and reference candidates included: the plant database needs a
    child's inspection before the child, and sending a parent again is harmless. A drift
    event's inspection is only a pointer to its window's last image: when the line has
    pruned it, the event goes without it; so may a candidate's (``store.plant``)."""

    outbox_ids: list[int] = field(default_factory=list)
    inspections: list[dict[str, Any]] = field(default_factory=list)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_history: list[dict[str, Any]] = field(default_factory=list)
    alerts: list[dict[str, Any]] = field(default_factory=list)
    drift_events: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.outbox_ids)


def _rows(conn: Connection, table: Any, key: Any, ids: set[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    query = select(table).where(key.in_(sorted(ids))).order_by(key)
    return [dict(row) for row in conn.execute(query).mappings()]


def take(engine: Engine, limit: int) -> Batch:
    """The engine's line's oldest ``limit`` outbox rows with the rows they name as they
    are now (one read transaction: no write lock). A row deleted since (pruned) is left
    out; its outbox row is still in ``outbox_ids``, so it is acknowledged with the rest."""
    batch = Batch()
    with reading(engine) as conn, conn.begin():
        owed = conn.execute(
            select(plant_outbox.c.id, plant_outbox.c.kind, plant_outbox.c.row_id)
            .where(plant_outbox.c.line == line_of(engine))
            .order_by(plant_outbox.c.id)
            .limit(limit)
        ).all()
        if not owed:
            return batch
        ids: dict[str, set[int]] = {kind: set() for kind in get_args(Kind)}
        for outbox_id, kind, row_id in owed:
            batch.outbox_ids.append(outbox_id)
            ids[kind].add(row_id)
        batch.reviews = _rows(conn, reviews, reviews.c.inspection_id, ids["review"])
        batch.review_history = _rows(conn, review_history, review_history.c.id,
                                     ids["review_history"])  # fmt: skip
        batch.alerts = _rows(conn, alerts, alerts.c.id, ids["alert"])
        batch.drift_events = _rows(conn, drift_events, drift_events.c.id, ids["drift_event"])
        batch.candidates = _rows(conn, reference_candidates, reference_candidates.c.id,
                                 ids["candidate"])  # fmt: skip
        children = (batch.reviews + batch.review_history + batch.alerts + batch.drift_events
                    + batch.candidates)  # fmt: skip
        parents = {r["inspection_id"] for r in children if r["inspection_id"] is not None}
        batch.inspections = _rows(conn, inspections, inspections.c.id, ids["inspection"] | parents)
    return batch


def acknowledge(engine: Engine, outbox_ids: Sequence[int]) -> None:
    """Forget outbox rows the plant database has committed. Only these ids: a change
    captured meanwhile for the same row has a newer id and is forwarded again."""
    if not outbox_ids:
        return
    with engine.begin() as conn:
        conn.execute(delete(plant_outbox).where(plant_outbox.c.id.in_(list(outbox_ids))))


def backlog(conn: Connection) -> dict[str, int]:
    """Outbox rows not yet forwarded, by line, for every forwarding line (0 included);
    empty for a database that forwards nothing, such as the plant database itself."""
    lines = {line: 0 for (line,) in conn.execute(select(plant_forwarding.c.line)).all()}
    counted = conn.execute(
        select(plant_outbox.c.line, func.count()).group_by(plant_outbox.c.line)
    ).all()
    for line, count in counted:
        lines[line] = int(count)
    return lines


def line_backlog(engine: Engine) -> int:
    """The engine's line's outbox rows not yet forwarded."""
    with reading(engine) as conn:
        query = select(func.count()).where(plant_outbox.c.line == line_of(engine))
        return int(conn.execute(query.select_from(plant_outbox)).scalar() or 0)
