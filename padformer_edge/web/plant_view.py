"""The plant view (``/plant``): every line of this database side by side.

A plant database holds the rows of many lines, each forwarded by its own daemon with its
heartbeat (``daemon.forwarder``), or written there directly. The view answers what a
quality engineer looks after them for: is each line's daemon alive (the banner's rule,
``daemon_state.judge``, per line), how fast is it inspecting (finished images per minute
over a recent window of the time index), and what did it last raise (its newest alerts
and drift events). Each question is one bounded query for all lines, or one short
per-line query walking an index from the newest row, so the page costs the same on a
history of millions of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, case, func, select

from padformer_edge.store.drift import DriftEvent
from padformer_edge.store.heartbeat import read_heartbeats
from padformer_edge.store.models import Alert, AlertState, Inspection, Status
from padformer_edge.store.tables import drift_events
from padformer_edge.web.daemon_state import DaemonState, judge, seconds
from padformer_edge.web.queries import distinct_in, unindexed

LAST_ROWS = 5  # alerts and drift events shown per line


@dataclass(frozen=True)
class LineSummary:
    """One line as the plant view shows it."""

    line: str
    state: DaemonState
    inspected: int  # finished (done or failed) in the window
    anomalies: int
    per_minute: float
    alerts: list[dict[str, Any]] = field(default_factory=list)
    drifts: list[DriftEvent] = field(default_factory=list)
    url: str | None = None  # the line's own page, when ``http.line_urls`` names it

    @property
    def daemon(self) -> str:
        """The heartbeat in a few words for the table (the banner's sentence is its
        tooltip): ``alive, 4 s ago``, ``silent for 11 min (limit 15 s)``, ``no heartbeat``."""
        beat, state = self.state.beat, self.state
        if beat is None:
            return "no heartbeat"
        if state.red:
            return f"silent for {seconds(beat.age_s)} (limit {seconds(state.limit_s or 0.0)})"
        return f"alive, {seconds(beat.age_s)} ago"


def _window_counts(conn: Connection, since: datetime) -> dict[str, tuple[int, int]]:
    """Per line (finished, anomalous) among rows discovered since ``since``."""
    line = unindexed(Inspection.line).label("line")
    finished = Inspection.status.in_((Status.done, Status.failed))
    rows = conn.execute(
        select(line, func.count(), func.sum(case((Inspection.is_anomaly.is_(True), 1), else_=0)))
        .where(Inspection.discovered_at >= since, finished)
        .group_by(line)
    ).all()  # fmt: skip
    return {str(name): (int(n or 0), int(a or 0)) for name, n, a in rows}


def _last_alerts(conn: Connection, line: str) -> list[dict[str, Any]]:
    query = (
        select(Alert.id, Alert.inspection_id, Alert.sink, Alert.state, Alert.created_at,
               Alert.last_error, Inspection.camera)
        .join(Inspection, Alert.inspection_id == Inspection.id)
        .where(Alert.line == line)
        .order_by(Alert.id.desc())
        .limit(LAST_ROWS)
    )  # fmt: skip
    return [{**row, "state": AlertState(row["state"]).value}
            for row in conn.execute(query).mappings()]  # fmt: skip


def _last_drifts(conn: Connection, line: str) -> list[DriftEvent]:
    query = (
        select(drift_events)
        .where(drift_events.c.line == line)
        .order_by(drift_events.c.id.desc())
        .limit(LAST_ROWS)
    )
    fields = DriftEvent.__dataclass_fields__
    return [DriftEvent(**{k: row[k] for k in fields}) for row in conn.execute(query).mappings()]


def never(line: str) -> DaemonState:
    """A line with rows in this database but no heartbeat (its rows were copied with
    ``db copy``, or its daemon never reached this database)."""
    return DaemonState(
        "never", f"Line {line} has no heartbeat in this database: nothing there vouches for it."
    )


def line_summaries(
    engine: Engine,
    since: datetime,
    window_min: float,
    stale_after_beats: float,
    lines: frozenset[str] | None,
    line_urls: dict[str, str],
) -> list[LineSummary]:
    """Every line with a heartbeat or a row in this database (of ``lines`` only when
    given), by name."""
    beats = {beat.line: beat for beat in read_heartbeats(engine)}
    with engine.connect() as conn:
        names = sorted(set(beats) | set(distinct_in(conn, "line")))
        if lines is not None:
            names = [name for name in names if name in lines]
        counts = _window_counts(conn, since)
        summaries = []
        for name in names:
            beat = beats.get(name)
            state = never(name) if beat is None else judge(beat, stale_after_beats, True)
            inspected, anomalies = counts.get(name, (0, 0))
            summary = LineSummary(name, state, inspected, anomalies, inspected / window_min,
                                  _last_alerts(conn, name), _last_drifts(conn, name),
                                  line_urls.get(name))  # fmt: skip
            summaries.append(summary)
    return summaries
