"""What the pages ask of the store: one bounded, indexed query per question.

Every read here is shaped for a history of millions of rows: pages use keyset paging on
``(discovered_at, id)`` (no ``OFFSET``, no total count), camera and product lists come
from an index skip-scan, and health figures look only at a recent window of
``discovered_at``. The one write, ``retry_alert``, is the outbox's second chance and runs
on a separate writer engine that only the authenticated retry endpoint asks for.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Select,
    bindparam,
    case,
    func,
    literal_column,
    select,
    text,
    tuple_,
)
from sqlalchemy.orm import Session

from padformer_edge.errors import UserError
from padformer_edge.store.history import Filters, record, records, review_clause, with_reviews
from padformer_edge.store.models import Alert, AlertState, Inspection, Status, utc_now
from padformer_edge.store.reviews import PastReview, reviews_of
from padformer_edge.store.tables import alerts, inspections, reviews
from padformer_edge.store.vocabulary import ReviewFilter

Verdict = Literal["anomaly", "good", "no_part", "failed", "skipped", "queued"]
VERDICTS: tuple[Verdict, ...] = ("anomaly", "good", "no_part", "failed", "skipped", "queued")
QUEUED = (Status.pending, Status.processing)
Listed = Literal["line", "camera", "product"]  # the columns whose values a filter lists
IN, RV, AL = inspections.c, reviews.c, alerts.c


def verdict_of(row: Inspection | dict[str, Any]) -> Verdict:
    """The one word a card shows: what happened to the file, and what the model said."""
    status = row["status"] if isinstance(row, dict) else row.status
    anomalous = row["is_anomaly"] if isinstance(row, dict) else row.is_anomaly
    status = Status(status)
    if status is Status.done:
        return "anomaly" if anomalous else "good"
    if status in QUEUED:
        return "queued"
    if status is Status.no_part:  # a framed profile found no part in the frame
        return "no_part"
    return "failed" if status is Status.failed else "skipped"


@dataclass(frozen=True)
class HistoryQuery:
    """The history page's filters; ``before`` is the id of the last row of the page above."""

    line: str | None = None
    camera: str | None = None
    product: str | None = None
    verdict: Verdict | None = None
    since: datetime | None = None
    until: datetime | None = None
    review: ReviewFilter | None = None
    before: int | None = None
    limit: int = 50
    lines: frozenset[str] | None = None  # the viewer's lines (``scope``); None: every line

    def clauses(self) -> list[ColumnElement[bool]]:
        clauses = Filters(
            line=self.line,
            camera=self.camera,
            product=self.product,
            since=self.since,
            until=self.until,
        ).clauses()
        # Only a finished inspection has a verdict (``is_anomaly`` is set by ``complete``
        # alone), so no status clause: SQLite would take the status index and sort every
        # finished row instead of walking the time index to the first page.
        if self.verdict == "anomaly":
            clauses.append(Inspection.is_anomaly.is_(True))
        elif self.verdict == "good":
            clauses.append(Inspection.is_anomaly.is_(False))
        elif self.verdict == "queued":
            clauses.append(Inspection.status.in_(QUEUED))
        elif self.verdict is not None:
            clauses.append(Inspection.status == Status(self.verdict))
        if self.review is not None:
            clauses.append(review_clause(self.review))
        if self.lines is not None:
            clauses.append(Inspection.line.in_(sorted(self.lines)))
        return clauses


@dataclass(frozen=True)
class Page:
    rows: list[dict[str, Any]]  # ``records``, the times as ``datetime`` (``card`` shows one)
    older: int | None  # the ``before`` of the next page, None on the last one


def _newest_first(query: Any) -> Any:
    return query.order_by(Inspection.discovered_at.desc(), Inspection.id.desc())


# The discovery time of the row an older page starts below, built once (``_DETAIL``);
# for a viewer limited to lines, only a row of theirs anchors a page: another line's id
# answers as an unknown one (the first page), so it tells neither that it exists nor when.
_ANCHOR = select(IN.discovered_at).where(IN.id == bindparam("before"))
_ANCHOR_OF_LINES = _ANCHOR.where(IN.line.in_(bindparam("lines", expanding=True)))


def history_page(engine: Engine, query: HistoryQuery) -> Page:
    """One page, newest first, plus whether an older page exists (one row looked ahead)."""
    clauses = query.clauses()
    with engine.connect() as conn:
        if query.before is not None:
            if query.lines is None:
                anchor = conn.execute(_ANCHOR, {"before": query.before}).scalar_one_or_none()
            else:
                anchored = {"before": query.before, "lines": sorted(query.lines)}
                anchor = conn.execute(_ANCHOR_OF_LINES, anchored).scalar_one_or_none()
            if anchor is not None:
                key = tuple_(Inspection.discovered_at, Inspection.id)
                clauses.append(key < tuple_(anchor, query.before))
        statement = _newest_first(with_reviews(*clauses)).limit(query.limit + 1)
        found = records(conn.execute(statement), times_as_text=False)
    older = found[query.limit - 1]["id"] if len(found) > query.limit else None
    return Page(found[: query.limit], older)


def iter_history(engine: Engine, query: HistoryQuery, batch: int = 1000) -> Iterator[dict]:
    """Every row matching the filters (no paging), newest first, ``batch`` rows at a time."""
    statement = _newest_first(with_reviews(*query.clauses()))
    with engine.connect() as conn:
        # A server-side cursor lives in a transaction: the page's reader runs its
        # statements without one (``reader``), so this connection asks for the default.
        result = conn.execution_options(
            isolation_level=conn.default_isolation_level, stream_results=True, yield_per=batch
        ).execute(statement)
        for row in result.mappings():
            yield record(dict(row))


def newest(engine: Engine, limit: int, lines: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """The live view's cards: the newest rows whatever their state (of ``lines`` only
    when given)."""
    return history_page(engine, HistoryQuery(limit=limit, lines=lines)).rows


def distinct_values(engine: Engine, column: Listed) -> list[str]:
    """Every line, camera or product in the history (``distinct_in``)."""
    with engine.connect() as conn:
        return distinct_in(conn, column)


def distinct_in(conn: Connection, column: Listed) -> list[str]:
    """Every line, camera or product in the history, by hopping along its index.

    A recursive ``min(x) WHERE x > previous`` touches one index entry per distinct value,
    where ``SELECT DISTINCT`` would read the whole index of a million-row table.
    """
    statement = text(
        f"WITH RECURSIVE v(x) AS (SELECT min({column}) FROM inspections "
        f"UNION ALL SELECT (SELECT min({column}) FROM inspections WHERE {column} > v.x) "
        "FROM v WHERE v.x IS NOT NULL) SELECT x FROM v WHERE x IS NOT NULL"
    )
    return [str(v) for v in conn.execute(statement).scalars()]


class Shown(NamedTuple):
    """One inspection's columns (``COLUMNS``), by attribute, as the detail page shows them."""

    id: int
    line: str
    camera: str
    product: str
    source_path: str
    sha256: str
    size_bytes: int
    status: Status
    attempts: int
    error: str | None
    score: float | None
    threshold: float | None
    is_anomaly: bool | None
    heatmap_path: str | None
    model_sha256: str | None
    profile_version: int | None
    detect_ms: float | None
    queue_ms: float | None
    discovered_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    part_box: str | None  # a framed profile's scored crop, "x0,y0,x1,y1" in frame pixels
    part_cut: bool | None  # the part ran off the frame's edge


class ShownAlert(NamedTuple):
    """What the detail page's alert table shows of one alert."""

    id: int
    sink: str
    state: AlertState
    attempts: int
    sent_at: datetime | None
    last_error: str | None


@dataclass(frozen=True)
class Detail:
    """What the detail page shows of the store, read on one connection."""

    row: Shown
    review: PastReview | None  # the verdict ``reviews`` holds; None when not reviewed
    alerts: list[ShownAlert]  # oldest first
    reviews: list[PastReview]  # every verdict given, newest first
    held_back_after: int | None  # for an anomaly without alerts: ``_alert_before``


# The inspection, its review and its alerts in one statement (a row per alert, one when
# there are none), built once with the id as a bound parameter: loading ORM objects took
# more of a detail page's time than rendering it, and their alerts a round trip of their
# own.
_DETAIL = (
    select(*IN, RV.verdict, RV.note, RV.reviewer, RV.reviewed_at,
           AL.id, AL.sink, AL.state, AL.attempts, AL.sent_at, AL.last_error)
    .select_from(inspections.outerjoin(reviews, RV.inspection_id == IN.id)
                 .outerjoin(alerts, AL.inspection_id == IN.id))
    .where(IN.id == bindparam("inspection_id"))
    .order_by(AL.id)
)  # fmt: skip
_SHOWN, _REVIEWED = len(Shown._fields), len(Shown._fields) + 4


def detail(engine: Engine, inspection_id: int) -> Detail | None:
    """Inspection ``inspection_id`` with its alerts and review, its past verdicts and,
    for an anomaly that raised no alert, the one whose alert held it back; ``None`` when
    there is no such row. One connection for all of it: each connection the pool hands
    out costs a ping, and each round trip gives up the interpreter lock to the other
    pages rendering, which is what a page waits for under a hundred viewers."""
    with engine.connect() as conn:
        found = conn.execute(_DETAIL, {"inspection_id": inspection_id}).all()
        if not found:
            return None
        row = Shown._make(found[0][:_SHOWN])
        verdict, note, reviewer, reviewed_at = found[0][_SHOWN:_REVIEWED]
        review = None if verdict is None else PastReview(verdict, note, reviewer, reviewed_at)
        shown = [ShownAlert._make(r[_REVIEWED:]) for r in found if r[_REVIEWED] is not None]
        past = reviews_of(conn, inspection_id)
        held = bool(row.is_anomaly) and not shown
        after = conn.execute(_alert_before(row)).scalar() if held else None
    return Detail(row, review, shown, past, None if after is None else int(after))


def line_of(engine: Engine, table: Literal["inspections", "alerts"], row_id: int) -> str | None:
    """The line of inspection or alert ``row_id``; ``None`` when there is no such row
    (what a write by id checks against the viewer's lines before it is made)."""
    column = Inspection.line if table == "inspections" else Alert.line
    key = Inspection.id if table == "inspections" else Alert.id
    with engine.connect() as conn:
        found = conn.execute(select(column).where(key == row_id)).scalar_one_or_none()
    return None if found is None else str(found)


def _alert_before(row: Shown) -> Select[Any]:
    """The latest inspection before ``row`` of its line, camera and profile that raised an
    anomaly alert: for an anomaly without alerts, the one whose alert started the
    cooldown that held this one back (the only reason the daemon raises none); no row
    when no such inspection is kept. The alerts' inspection index is walked backwards
    from ``row`` to the first match: a ``max()`` over the join read every alert kept."""
    return (
        select(AL.inspection_id)
        .join(inspections, IN.id == AL.inspection_id)
        .where(
            IN.line == row.line,  # a cooldown is one line's daemon's, never another's
            IN.camera == row.camera,
            IN.product == row.product,
            AL.inspection_id < row.id,
            IN.is_anomaly.is_(True),
        )
        .order_by(AL.inspection_id.desc())
        .limit(1)
    )


def unindexed(column: Any) -> Any:
    """``column || ''``: the same value, but not a column SQLite can take an index for.

    Grouping by a bare camera makes SQLite's planner walk the whole camera index (rows
    come out grouped already) instead of the few rows a time or id range selects.
    """
    return column.op("||")(literal_column("''"))


@dataclass(frozen=True)
class CameraHealth:
    camera: str
    inspected: int
    anomalies: int
    failed: int
    queued: int
    per_minute: float
    detect_ms_p50: float | None
    detect_ms_p95: float | None
    no_part: int = 0  # frames in which no part was found: neither inspected nor failed

    @property
    def anomaly_rate(self) -> float | None:
        return self.anomalies / self.inspected if self.inspected else None


@dataclass(frozen=True)
class Health:
    window_min: float
    cameras: list[CameraHealth]
    queued: int
    failed: list[dict[str, Any]]
    alert_states: dict[str, int]
    dead_alerts: list[dict[str, Any]]


def _in_lines(column: Any, lines: frozenset[str] | None) -> list[ColumnElement[bool]]:
    """A clause keeping rows of ``lines`` (none when every line is wanted)."""
    return [] if lines is None else [column.in_(sorted(lines))]


def _window_counts(
    conn: Connection, since: datetime, lines: frozenset[str] | None = None
) -> dict[str, tuple[int, int, int, int]]:
    """Per camera (inspected, anomalous, failed, no part) among rows discovered since
    ``since``."""
    camera = unindexed(Inspection.camera).label("camera")
    status = Inspection.status

    def count_if(condition: Any) -> Any:
        return func.sum(case((condition, 1), else_=0))

    rows = conn.execute(
        select(camera, count_if(status == Status.done),
               count_if(Inspection.is_anomaly.is_(True)), count_if(status == Status.failed),
               count_if(status == Status.no_part))
        .where(Inspection.discovered_at >= since, *_in_lines(Inspection.line, lines))
        .group_by(camera)
    ).all()  # fmt: skip
    return {str(c): (int(d or 0), int(a or 0), int(f or 0), int(n or 0)) for c, d, a, f, n in rows}


def _window_detect_percentiles(
    conn: Connection, since: datetime, lines: frozenset[str] | None = None
) -> dict[str, tuple[float, float]]:
    """Nearest-rank p50 and p95 of detect time per camera over the window, in SQL."""
    camera = unindexed(Inspection.camera)
    where = [Inspection.discovered_at >= since, Inspection.detect_ms.is_not(None),
             *_in_lines(Inspection.line, lines)]  # fmt: skip
    sizes = conn.execute(select(camera, func.count()).where(*where).group_by(camera)).all()
    ranks = {str(c): (max(1, math.ceil(n * 0.5)), max(1, math.ceil(n * 0.95))) for c, n in sizes}
    if not ranks:
        return {}
    ranked = (
        select(
            camera.label("camera"),
            Inspection.detect_ms.label("v"),
            func.row_number().over(partition_by=camera, order_by=Inspection.detect_ms).label("rn"),
        )
        .where(*where)
        .subquery()
    )
    wanted = sorted({r for pair in ranks.values() for r in pair})
    found: dict[tuple[str, int], float] = {}
    for cam, rn, value in conn.execute(
        select(ranked.c.camera, ranked.c.rn, ranked.c.v).where(ranked.c.rn.in_(wanted))
    ):
        found[(str(cam), int(rn))] = float(value)
    return {
        cam: (found[(cam, p50)], found[(cam, p95)])
        for cam, (p50, p95) in ranks.items()
        if (cam, p50) in found and (cam, p95) in found
    }


def health(
    engine: Engine,
    since: datetime,
    window_min: float,
    failed_limit: int = 20,
    lines: frozenset[str] | None = None,
) -> Health:
    """Per camera rate, anomaly rate and detect-time percentiles over the window since
    ``since`` (a range of the time index); the queue, the newest failures and the outbox
    over the whole store (the status and state indexes); of ``lines`` only when given."""
    mine = _in_lines(Inspection.line, lines)
    with engine.connect() as conn:
        counts = _window_counts(conn, since, lines)
        times = _window_detect_percentiles(conn, since, lines)
        queued = dict(
            conn.execute(
                select(Inspection.camera, func.count())
                .where(Inspection.status.in_(QUEUED), *mine)
                .group_by(Inspection.camera)
            ).all()
        )
        failed = conn.execute(
            select(Inspection.id, Inspection.camera, Inspection.source_path, Inspection.error,
                   Inspection.discovered_at)
            .where(Inspection.status == Status.failed, *mine)
            .order_by(Inspection.id.desc())
            .limit(failed_limit)
        ).mappings().all()  # fmt: skip
        states = dict(conn.execute(select(Alert.state, func.count())
                                   .where(*_in_lines(Alert.line, lines))
                                   .group_by(Alert.state)).all())  # fmt: skip
        dead = conn.execute(
            select(Alert.id, Alert.inspection_id, Alert.sink, Alert.attempts, Alert.last_error,
                   Alert.created_at, Inspection.camera)
            .join(Inspection, Alert.inspection_id == Inspection.id)
            .where(Alert.state == AlertState.dead, *_in_lines(Alert.line, lines))
            .order_by(Alert.id.desc())
            .limit(failed_limit)
        ).mappings().all()  # fmt: skip
    cameras = []
    for name in sorted(set(counts) | set(queued)):
        done, anomalies, failures, empty = counts.get(name, (0, 0, 0, 0))
        p50, p95 = times.get(name, (None, None))
        rate = (done + failures + empty) / window_min
        cameras.append(CameraHealth(name, done, anomalies, failures, int(queued.get(name, 0)),
                                    rate, p50, p95, empty))  # fmt: skip
    return Health(
        window_min,
        cameras,
        sum(int(v) for v in queued.values()),
        [dict(r) for r in failed],
        {AlertState(k).value: int(v) for k, v in states.items()},
        [dict(r) for r in dead],
    )


def retry_alert(writer: Engine, alert_id: int) -> None:
    """Make one dead (or waiting) alert due now with a fresh attempt count.

    A sent alert is refused: sending it again would be a second notification.
    """
    with Session(writer) as session, session.begin():
        alert = session.get(Alert, alert_id)
        if alert is None:
            raise UserError(f"there is no alert {alert_id}; the health page lists them.")
        if alert.state is AlertState.sent:
            raise UserError(f"alert {alert_id} was already sent; there is nothing to retry.")
        alert.state, alert.attempts, alert.next_attempt_at = AlertState.pending, 0, utc_now()
