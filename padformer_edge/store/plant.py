"""The plant database's side of forwarding: a line's changes written idempotently.

Every row is written by its natural key, never by the line's local ids (two line PCs
both have an inspection 1): an inspection by (line, path, content), the file's identity
on the plant; a review by its inspection; a review history entry by (inspection, time,
reviewer, verdict); an alert by (inspection, sink, time, payload); a drift event by
(line, camera, kind, time), the key ``db copy`` uses, so an event copied in and later
forwarded stays one row; a reference candidate by (product, picture sha256), the key the
table holds it by. Writing the same batch twice therefore leaves the database as
writing it once, which is what makes forwarding exactly once: the forwarder
acknowledges its outbox rows after this transaction commits, and a crash between the
two only repeats a batch. One line's rows are written by its one daemon
(``store.claims``), so the look-ups below never race another writer.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select, update
from sqlalchemy.dialects import postgresql

from padformer_edge.store.outbox import Batch
from padformer_edge.store.tables import (
    alerts,
    drift_events,
    inspections,
    reference_candidates,
    review_history,
    reviews,
)

_INSPECTION_KEY = ("line", "source_path", "sha256")


def _without(row: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in row.items() if k not in names}


def _upsert_inspections(conn: Connection, rows: list[dict[str, Any]]) -> dict[int, int]:
    """The plant's id of each inspection of ``rows`` (a line's local rows) by its local
    id, every row inserted or brought up to date: one statement for the batch (rows
    distinct by the key, which the line's own table holds unique too)."""
    if not rows:
        return {}
    values = [_without(row, "id") for row in rows]
    insert = postgresql.insert(inspections)
    changed = {k: insert.excluded[k] for k in values[0] if k not in _INSPECTION_KEY}
    statement = insert.on_conflict_do_update(
        index_elements=list(_INSPECTION_KEY), set_=changed
    ).returning(inspections.c.id, sort_by_parameter_order=True)
    plant_ids = conn.execute(statement, values).scalars().all()
    return {row["id"]: int(plant_id) for row, plant_id in zip(rows, plant_ids, strict=True)}


def _upsert_review(conn: Connection, row: dict[str, Any], plant_id: int) -> None:
    values = {**row, "inspection_id": plant_id}
    insert = postgresql.insert(reviews).values(**values)
    changed = {k: insert.excluded[k] for k in values if k != "inspection_id"}
    conn.execute(insert.on_conflict_do_update(index_elements=["inspection_id"], set_=changed))


def _insert_history(conn: Connection, row: dict[str, Any], plant_id: int) -> None:
    c = review_history.c
    found = conn.execute(
        select(c.id).where(
            c.inspection_id == plant_id,
            c.reviewed_at == row["reviewed_at"],
            c.reviewer == row["reviewer"],
            c.verdict == row["verdict"],
        )
    ).first()
    if found is None:
        values = {**_without(row, "id"), "inspection_id": plant_id}
        conn.execute(review_history.insert().values(values))


_ALERT_PROGRESS = ("state", "attempts", "next_attempt_at", "last_error", "sent_at")
_ALERT_KEY = ("inspection_id", "sink", "created_at", "payload")


def _upsert_alerts(conn: Connection, rows: list[dict[str, Any]], plant_ids: dict[int, int]) -> None:
    """Each alert of ``rows`` inserted under its inspection's plant id, or its progress
    (state, attempts, when sent) brought over: the plant's alerts of those inspections
    are read once, and the inserts and the updates go as one statement each."""
    c = alerts.c
    mine = [
        {**row, "inspection_id": plant_ids[row["inspection_id"]]}
        for row in rows
        if row["inspection_id"] in plant_ids
    ]
    if not mine:
        return
    parents = sorted({row["inspection_id"] for row in mine})
    query = select(c.id, *(c[n] for n in _ALERT_KEY)).where(c.inspection_id.in_(parents))
    found = {tuple(k[n] for n in _ALERT_KEY): k["id"] for k in conn.execute(query).mappings()}
    new, progress = [], []
    for row in mine:
        plant_id = found.get(tuple(row[name] for name in _ALERT_KEY))
        if plant_id is None:
            new.append(_without(row, "id"))
        else:  # bound under names of their own: a column's name is the SET clause's
            progress.append({"p_id": plant_id, **{f"p_{k}": row[k] for k in _ALERT_PROGRESS}})
    if new:
        conn.execute(alerts.insert(), new)
    if progress:
        statement = update(alerts).where(c.id == bindparam("p_id"))
        changes = {k: bindparam(f"p_{k}") for k in _ALERT_PROGRESS}
        conn.execute(statement.values(changes), progress)


_DRIFT_KEY = ("line", "camera", "kind", "raised_at")


def _upsert_drift(conn: Connection, row: dict[str, Any], plant_id: int | None) -> None:
    """The event inserted, or its acknowledgement brought over. An acknowledgement is
    never taken back: one given on the plant (``alerts ack`` there) stays when the line
    sends the event again still open."""
    c = drift_events.c
    found = conn.execute(
        select(c.id).where(*(c[name] == row[name] for name in _DRIFT_KEY))
    ).first()
    if found is None:
        values = {**_without(row, "id"), "inspection_id": plant_id}
        conn.execute(drift_events.insert().values(values))
    elif row["acknowledged_at"] is not None:
        acknowledged = {"acknowledged_at": row["acknowledged_at"],
                        "acknowledged_by": row["acknowledged_by"]}  # fmt: skip
        conn.execute(update(drift_events).where(c.id == found[0]).values(**acknowledged))


_DECISION = ("state", "decided_at", "decided_by", "note")


def _upsert_candidate(conn: Connection, row: dict[str, Any], plant_id: int | None) -> None:
    """The candidate inserted, or the line's decision on it brought over when it is newer
    than the one the plant holds: a decision taken on the plant (``profile candidates``
    there) is not taken back by the line sending the candidate again still pending, and
    a later one on the line replaces it. A candidate whose inspection the line pruned
    before the plant had it (``plant_id`` None) cannot be inserted: the plant names its
    inspection by the plant's own id."""
    c = reference_candidates.c
    found = conn.execute(
        select(c.id, c.decided_at).where(c.product == row["product"], c.sha256 == row["sha256"])
    ).first()
    if found is None:
        if plant_id is not None:
            values = {**_without(row, "id"), "inspection_id": plant_id}
            conn.execute(reference_candidates.insert().values(values))
        return
    decided = row["decided_at"]
    if decided is not None and (found.decided_at is None or decided > found.decided_at):
        decision = {k: row[k] for k in _DECISION}
        conn.execute(update(reference_candidates).where(c.id == found.id).values(**decision))


def write_batch(plant: Engine, batch: Batch) -> None:
    """Write ``batch`` (``outbox.take``) into the plant database in one transaction."""
    with plant.begin() as conn:
        plant_ids = _upsert_inspections(conn, batch.inspections)
        # A child is read with its inspection in one snapshot (and deleted with it), so
        # its parent is always here; ``get`` only guards that invariant.
        _upsert_alerts(conn, batch.alerts, plant_ids)
        for rows, write in (
            (batch.reviews, _upsert_review),
            (batch.review_history, _insert_history),
        ):
            for row in rows:
                plant_id = plant_ids.get(row["inspection_id"])
                if plant_id is not None:
                    write(conn, row, plant_id)
        # An event's inspection is a pointer, not a parent: one the line pruned is none.
        for row in batch.drift_events:
            _upsert_drift(conn, row, plant_ids.get(row["inspection_id"]))
        for row in batch.candidates:  # kept by the line when it prunes their inspection
            _upsert_candidate(conn, row, plant_ids.get(row["inspection_id"]))
