"""Questions people ask of the inspection history, answered inside the database.

Filters, grouping and percentiles are SQL (window functions exist on SQLite and
PostgreSQL alike), so a million-row history costs the database an index scan rather than
costing Python a million objects. Export streams rows through a server-side cursor and
never holds more than one batch.

Reads are SQLAlchemy Core on the tables of ``tables``, so ``results list`` and the
other read commands never import the ORM; only ``get_inspection`` (an inspection with
its alerts, for ``results show``) loads ORM objects, and imports the ORM when called.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from sqlalchemy import (
    ColumnElement,
    Engine,
    Enum,
    Row,
    Select,
    and_,
    case,
    delete,
    func,
    literal,
    select,
)

from padformer_edge.store.csv_cells import SafeDictWriter
from padformer_edge.store.locations import resolve_stored
from padformer_edge.store.tables import UTCDateTime, inspections, reviews
from padformer_edge.store.vocabulary import ExportFormat as ExportFormat
from padformer_edge.store.vocabulary import GroupBy as GroupBy
from padformer_edge.store.vocabulary import ReviewFilter, ReviewVerdict, Status

if TYPE_CHECKING:
    from padformer_edge.store.models import Inspection

COLUMNS = [c.name for c in inspections.columns]
# The columns of the two tables, as the queries below name them.
IN, RV = inspections.c, reviews.c
# An inspection's review, flattened beside its columns in lists and exports (all None
# for a row nobody reviewed).
REVIEW_COLUMNS = ["review", "review_note", "reviewed_by", "reviewed_at"]
RECORD_COLUMNS = COLUMNS + REVIEW_COLUMNS
FINISHED = (Status.done, Status.failed, Status.skipped, Status.no_part)


@dataclass(frozen=True)
class Filters:
    line: str | None = None
    camera: str | None = None
    product: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    status: Status | None = None
    anomalies_only: bool = False
    min_score: float | None = None
    review: ReviewFilter | None = None

    def clauses(self) -> list[ColumnElement[bool]]:
        wanted = [
            (self.line, lambda v: IN.line == v),
            (self.camera, lambda v: IN.camera == v),
            (self.product, lambda v: IN.product == v),
            (self.since, lambda v: IN.discovered_at >= v),
            (self.until, lambda v: IN.discovered_at < v),
            (self.status, lambda v: IN.status == v),
            (self.min_score, lambda v: IN.score >= v),
        ]
        clauses = [make(value) for value, make in wanted if value is not None]
        if self.anomalies_only:
            clauses.append(IN.is_anomaly.is_(True))
        if self.review is not None:
            clauses.append(review_clause(self.review))
        return clauses


def review_clause(wanted: ReviewFilter) -> ColumnElement[bool]:
    """Rows with a review of that verdict, with any review, or with none.

    A subquery on the reviews table rather than a join, so every query that takes
    ``Filters`` keeps its shape; the (verdict, inspection_id) index answers it.
    """
    if wanted in ("reviewed", "unreviewed"):
        reviewed = select(RV.inspection_id)
        if wanted == "reviewed":
            return IN.id.in_(reviewed)
        return IN.id.not_in(reviewed)
    return IN.id.in_(select(RV.inspection_id).where(RV.verdict == ReviewVerdict(wanted)))


_WITH_REVIEWS = select(
    *IN,
    RV.verdict.label("review"),
    RV.note.label("review_note"),
    RV.reviewer.label("reviewed_by"),
    RV.reviewed_at.label("reviewed_at"),
).select_from(inspections.outerjoin(reviews, RV.inspection_id == IN.id))


def with_reviews(*where: ColumnElement[bool]) -> Select[Any]:
    """Every inspection column plus its review's (``REVIEW_COLUMNS``), unreviewed rows
    included: one primary-key look-up per row in the small reviews table. The columns
    and the join are built once (a page asks for them each time it renders)."""
    return _WITH_REVIEWS.where(*where)


def _review_fields(row: Inspection) -> dict[str, Any]:
    review = row.__dict__.get("review")  # only if loaded: never a lazy load after the session
    if review is None:
        return dict.fromkeys(REVIEW_COLUMNS)
    return {"review": review.verdict, "review_note": review.note,
            "reviewed_by": review.reviewer, "reviewed_at": review.reviewed_at}  # fmt: skip


def record(values: Any) -> dict[str, Any]:
    """One inspection and its review as plain JSON-ready values (ISO times, states as
    text), in ``RECORD_COLUMNS`` order."""
    if isinstance(values, dict):
        mapping = values
    elif isinstance(values, Row):  # a row of ``with_reviews``
        mapping = dict(values._mapping)
    else:  # an ORM ``Inspection``
        mapping = {c: getattr(values, c) for c in COLUMNS} | _review_fields(values)
    out = {}
    for name in RECORD_COLUMNS:
        value = mapping.get(name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, enum.Enum):
            value = value.value
        out[name] = value
    return out


def _of_type(kind: type) -> tuple[str, ...]:
    """The ``RECORD_COLUMNS`` (as ``with_reviews`` selects them) whose type is ``kind``."""
    selected = with_reviews().selected_columns
    return tuple(name for name, column in zip(RECORD_COLUMNS, selected, strict=True)
                 if isinstance(column.type, kind))  # fmt: skip


_TIMES, _STATES = _of_type(UTCDateTime), _of_type(Enum)


def records(rows: Iterable[Row[Any]], times_as_text: bool = True) -> list[dict[str, Any]]:
    """``record`` of each row of a ``with_reviews`` statement, converting only the
    columns whose type needs it: a history page of fifty rows spent more time asking
    each of its thousand values whether it was a time or a state than reading them.
    Without ``times_as_text`` the times stay ``datetime`` values, for a page that
    formats the one it shows itself (``isoformat`` was most of the conversion)."""
    out = []
    times = _TIMES if times_as_text else ()
    for row in rows:
        values = dict(zip(RECORD_COLUMNS, row, strict=True))
        for name in times:
            if (moment := values[name]) is not None:
                values[name] = moment.isoformat()
        for name in _STATES:
            if (state := values[name]) is not None:
                values[name] = state.value
        out.append(values)
    return out


def list_inspections(engine: Engine, filters: Filters, limit: int = 50) -> list[Row[Any]]:
    """Newest first (by discovery time), at most ``limit`` rows, each with the inspection's
    columns (as attributes: ``row.id``, ``row.status``) and its review's
    (``REVIEW_COLUMNS``)."""
    query = (
        with_reviews(*filters.clauses())
        .order_by(IN.discovered_at.desc(), IN.id.desc())
        .limit(limit)
    )
    with engine.connect() as conn:
        return list(conn.execute(query))


def get_inspection(engine: Engine, inspection_id: int) -> Inspection | None:
    """One row with its alerts loaded, usable after the session closes."""
    from sqlalchemy.orm import Session, selectinload  # the ORM only for this one object

    from padformer_edge.store.models import Inspection

    with Session(engine) as session:
        return session.scalars(
            select(Inspection)
            .where(Inspection.id == inspection_id)
            .options(selectinload(Inspection.alerts), selectinload(Inspection.review))
        ).one_or_none()


@dataclass(frozen=True)
class GroupStats:
    group: str
    total: int
    done: int
    anomalies: int
    failed: int
    skipped: int
    queued: int
    no_part: int  # frames of a framed profile in which no part was found: not a verdict
    score_p50: float | None
    score_p95: float | None
    detect_ms_p50: float | None
    detect_ms_p95: float | None

    @property
    def anomaly_rate(self) -> float | None:
        """Anomalies among the inspected (done) rows; failures are not verdicts."""
        return self.anomalies / self.done if self.done else None


def _group_key(engine: Engine, by: GroupBy) -> ColumnElement[Any] | None:
    """The SQL expression rows are grouped by; ``None`` for one overall group."""
    at = IN.discovered_at
    if by == "line":
        return IN.line
    if by == "camera":
        return IN.camera
    if by == "product":
        return IN.product
    if by in ("hour", "day"):
        if engine.dialect.name == "postgresql":
            pattern = 'YYYY-MM-DD"T"HH24":00Z"' if by == "hour" else "YYYY-MM-DD"
            return func.to_char(func.timezone("UTC", at), pattern)
        return func.strftime("%Y-%m-%dT%H:00Z" if by == "hour" else "%Y-%m-%d", at)
    return None


def _percentiles(
    engine: Engine, key: ColumnElement[Any] | None, metric: Any, where: list[ColumnElement[bool]]
) -> dict[tuple[str, int], float]:
    """Nearest-rank p50 and p95 of ``metric`` per group, as {(group, 50|95): value}.

    Group sizes come from a cheap GROUP BY first, so the ranking pass needs only
    ``row_number()``; a ``count() OVER`` would make SQLite buffer every partition again.
    """
    label = (literal("all") if key is None else key).label("grp")
    where = [metric.is_not(None), *where]
    sizes = select(label, func.count()).where(*where)
    ranked = (
        select(label, metric.label("v"),
               func.row_number().over(partition_by=key, order_by=metric).label("rn"))
        .where(*where)
        .subquery()
    )  # fmt: skip
    with engine.connect() as conn:
        counts = conn.execute(sizes if key is None else sizes.group_by(key)).all()
        ranks = {str(g): ((n * 50 + 99) // 100, (n * 95 + 99) // 100) for g, n in counts if n}
        wanted = sorted({rank for pair in ranks.values() for rank in pair})
        rows = conn.execute(select(ranked.c.grp, ranked.c.rn, ranked.c.v)
                            .where(ranked.c.rn.in_(wanted))).all()  # fmt: skip
    out: dict[tuple[str, int], float] = {}
    for group, rn, value in rows:
        for percent, rank in zip((50, 95), ranks[str(group)], strict=True):
            if rn == rank:
                out[(str(group), percent)] = value
    return out


def stats(
    engine: Engine, by: GroupBy = "all", since: datetime | None = None, line: str | None = None
) -> list[GroupStats]:
    """Counts, anomaly rate, failures and score/detect-time percentiles per group (of
    ``line``'s rows only when given)."""
    key = _group_key(engine, by)
    where = Filters(line=line, since=since).clauses()
    status = IN.status

    def count_if(condition: ColumnElement[bool]) -> Any:
        return func.sum(case((condition, 1), else_=0))

    query = select(
        (literal("all") if key is None else key).label("grp"),
        func.count(),
        count_if(status == Status.done),
        count_if(and_(status == Status.done, IN.is_anomaly.is_(True))),
        count_if(status == Status.failed),
        count_if(status == Status.skipped),
        count_if(status.in_([Status.pending, Status.processing])),
        count_if(status == Status.no_part),
    ).where(*where)
    if key is not None:
        query = query.group_by(key).order_by(key)
    with engine.connect() as conn:
        counts = conn.execute(query).all()
    done_only = [*where, IN.status == Status.done]
    scores = _percentiles(engine, key, IN.score, done_only)
    times = _percentiles(engine, key, IN.detect_ms, done_only)
    return [
        GroupStats(
            str(g),
            int(total),
            int(done or 0),
            int(anom or 0),
            int(failed or 0),
            int(skipped or 0),
            int(queued or 0),
            int(no_part or 0),
            scores.get((str(g), 50)),
            scores.get((str(g), 95)),
            times.get((str(g), 50)),
            times.get((str(g), 95)),
        )
        for g, total, done, anom, failed, skipped, queued, no_part in counts
    ]


def iter_records(engine: Engine, filters: Filters, batch: int = 1000) -> Iterator[dict[str, Any]]:
    """Every matching row, oldest first, fetched ``batch`` rows at a time."""
    query: Select[Any] = with_reviews(*filters.clauses()).order_by(IN.id)
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, yield_per=batch).execute(query)
        for row in result.mappings():
            yield record(dict(row))


def export(engine: Engine, out: IO[str], fmt: ExportFormat, filters: Filters) -> int:
    """Write matching rows, with their reviews, to ``out`` as CSV (with header) or JSON
    lines; return the count."""
    writer = SafeDictWriter(out, fieldnames=RECORD_COLUMNS) if fmt == "csv" else None
    if writer is not None:
        writer.writeheader()
    count = 0
    for row in iter_records(engine, filters):
        if writer is not None:
            writer.writerow(row)
        else:
            out.write(json.dumps(row) + "\n")
        count += 1
    return count


@dataclass(frozen=True)
class PruneResult:
    rows: int
    heatmaps_deleted: int
    heatmaps_missing: int


def prune(
    engine: Engine,
    older_than: datetime,
    *,
    keep_anomalies: bool = False,
    batch: int = 1000,
    line: str | None = None,
) -> PruneResult:
    """Delete finished rows discovered before ``older_than``, their alerts and heatmaps.

    Queued and in-flight rows are never pruned: they are work, not history. Rows go in
    batches of short transactions so the daemon's writer waits milliseconds, not the
    length of the whole prune. A batch's heatmaps are removed right after its commit, so
    a crash in between can leave orphan image files but never a row whose heatmap is gone.
    ``line`` limits it to one line's rows (on a database lines share, another line's
    heatmaps are on its own PC).
    """
    condition = [IN.discovered_at < older_than, IN.status.in_(FINISHED)]
    if line is not None:
        condition.append(IN.line == line)
    if keep_anomalies:
        condition.append(IN.is_anomaly.is_not(True))
    rows = deleted = missing = 0
    while True:
        with engine.begin() as conn:
            found = conn.execute(
                select(IN.id, IN.heatmap_path).where(*condition).order_by(IN.id).limit(batch)
            ).all()
            if not found:
                break
            conn.execute(delete(inspections).where(IN.id.in_([i for i, _ in found])))
        rows += len(found)
        for _, heatmap in found:
            if not heatmap:
                continue
            try:
                resolve_stored(heatmap).unlink()
                deleted += 1
            except FileNotFoundError:
                missing += 1
    return PruneResult(rows, deleted, missing)
