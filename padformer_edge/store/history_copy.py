"""``db copy``: a line's history, copied from its SQLite file into the plant's database.

A line that ran alone (its SQLite file) joins a plant: what it inspected, reviewed and
raised so far goes into the plant's database, so the plant's page and reports see it
beside every other line. The copy is idempotent: every row is looked up by what
identifies it on any database (an inspection by its line, file and content; a review by
its inspection; an alert by its inspection, sink and creation time; a drift event by its
line, camera, kind and time; a candidate by its product and picture), so copying again,
after an interruption or to pick up what the line did since, adds only what is missing.
It runs in one transaction on the plant's database: a copy cut off half-way leaves
nothing there.

What is copied, and why not the rest:

- Inspections that are finished (done, failed, skipped). Pending and processing rows are
  the line's work queue, which stays on the line; its daemon finishes them.
- Reviews, review history, drift events and reference candidates, their inspection ids
  translated to the plant's.
- Alerts already sent or given up on. A pending alert is still the line's to send: a copy
  in the plant's database would be sent a second time by whoever dispatches there.
- Not the users, the heartbeat or the claims: users are the plant's own, and a
  heartbeat or a claim describes a daemon running now.

Pictures (camera files, heatmaps, candidates' copies) are not moved: each row keeps its
``line`` and its path, recorded relative to that line's state folder
(``store.locations``), so it names the same file on that line PC as before.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, Table, insert, select, tuple_

from padformer_edge.errors import UserError
from padformer_edge.store.engine import describe, reading
from padformer_edge.store.tables import (
    alerts,
    drift_events,
    inspections,
    reference_candidates,
    review_history,
    reviews,
)
from padformer_edge.store.vocabulary import AlertState, Status

CHUNK = 500
FINISHED = (Status.done, Status.failed, Status.skipped, Status.no_part)
SETTLED_ALERTS = (AlertState.sent, AlertState.dead)


@dataclass
class CopyReport:
    """Rows added to the plant's database, and rows found there already, per table; and
    rows left on the line (its queue, its unsent alerts, candidates whose inspection the
    line no longer has)."""

    added: dict[str, int] = field(default_factory=dict)
    present: dict[str, int] = field(default_factory=dict)
    left: dict[str, int] = field(default_factory=dict)

    def count(self, kind: dict[str, int], table: str, number: int = 1) -> None:
        kind[table] = kind.get(table, 0) + number


def _chunks(conn: Connection, table: Table, *where: Any) -> Iterator[list[dict[str, Any]]]:
    """The rows of ``table`` (matching ``where``) as dicts, ``CHUNK`` at a time by id."""
    key = table.c.id if "id" in table.c else table.c.inspection_id
    last = None
    while True:
        query = select(table).where(*where).order_by(key).limit(CHUNK)
        if last is not None:
            query = query.where(key > last)
        rows = [dict(row._mapping) for row in conn.execute(query)]
        if not rows:
            return
        yield rows
        last = rows[-1][key.name]


def _without_id(row: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in row.items() if name != "id"}


def _copy_inspections(src: Connection, dst: Connection, report: CopyReport) -> dict[int, int]:
    """Finished inspections, each once; returns the source id -> plant id of every one."""
    ids: dict[int, int] = {}
    c = inspections.c
    for rows in _chunks(src, inspections, c.status.in_(FINISHED)):
        keys = [(r["line"], r["source_path"], r["sha256"]) for r in rows]
        found = {
            (line, path, sha): plant_id
            for plant_id, line, path, sha in dst.execute(
                select(c.id, c.line, c.source_path, c.sha256).where(
                    tuple_(c.line, c.source_path, c.sha256).in_(keys)
                )
            )
        }
        new = [r for r, key in zip(rows, keys, strict=True) if key not in found]
        for row, key in zip(rows, keys, strict=True):
            if key in found:
                ids[row["id"]] = found[key]
        if new:
            made = dst.execute(
                insert(inspections).returning(c.id, sort_by_parameter_order=True),
                [_without_id(r) for r in new],
            ).scalars()
            for row, plant_id in zip(new, made, strict=True):
                ids[row["id"]] = plant_id
        report.count(report.added, "inspections", len(new))
        report.count(report.present, "inspections", len(rows) - len(new))
    left = src.execute(select(c.id).where(c.status.not_in(FINISHED))).all()
    report.count(report.left, "inspections", len(left))
    return ids


def _copy_dependents(
    src: Connection,
    dst: Connection,
    table: Table,
    key: Sequence[str],
    ids: dict[int, int],
    report: CopyReport,
    *where: Any,
) -> None:
    """Rows of ``table`` not yet in the plant by ``key`` (their inspection id translated
    by ``ids``); a row whose inspection was not copied is left on the line, except a
    drift event, whose inspection is only a pointer to the window's last image."""
    name = table.name
    loose = table is drift_events
    for rows in _chunks(src, table, *where):
        ready = []
        for row in rows:
            inspection = row.get("inspection_id")
            if inspection is not None and inspection in ids:
                row["inspection_id"] = ids[inspection]
            elif inspection is not None and loose:
                row["inspection_id"] = None
            elif inspection is not None:
                report.count(report.left, name)
                continue
            ready.append(row)
        if not ready:
            continue
        columns = [table.c[k] for k in key]
        wanted = [tuple(r[k] for k in key) for r in ready]
        found = {tuple(row) for row in dst.execute(
            select(*columns).where(tuple_(*columns).in_(wanted))
        )}  # fmt: skip
        new = [r for r, k in zip(ready, wanted, strict=True) if k not in found]
        if new:
            dst.execute(insert(table), [_without_id(r) for r in new])
        report.count(report.added, name, len(new))
        report.count(report.present, name, len(ready) - len(new))


def copy_history(source: Engine, target: Engine) -> CopyReport:
    """Copy ``source``'s history into ``target`` (both at the schema's head), once."""
    if describe(source.url) == describe(target.url):
        raise UserError(
            f"db copy reads {describe(source.url)} and writes the same database; give the "
            "line's file with --from and the plant's database with --to."
        )
    report = CopyReport()
    with reading(source) as src, target.begin() as dst:
        ids = _copy_inspections(src, dst, report)
        _copy_dependents(src, dst, reviews, ("inspection_id",), ids, report)
        _copy_dependents(
            src,
            dst,
            review_history,
            ("inspection_id", "reviewed_at", "reviewer", "verdict"),
            ids,
            report,
        )
        _copy_dependents(
            src,
            dst,
            alerts,
            ("inspection_id", "sink", "created_at"),
            ids,
            report,
            alerts.c.state.in_(SETTLED_ALERTS),
        )
        unsent = src.execute(select(alerts.c.id).where(alerts.c.state.not_in(SETTLED_ALERTS)))
        report.count(report.left, "alerts", len(unsent.all()))
        _copy_dependents(
            src, dst, drift_events, ("line", "camera", "kind", "raised_at"), ids, report
        )
        _copy_dependents(src, dst, reference_candidates, ("product", "sha256"), ids, report)
    return report
