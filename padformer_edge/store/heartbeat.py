"""Each line's daemon's heartbeat in the database it writes: one upserted row per line,
read by the page and ``/metrics``.

A file per machine could not tell which daemon it belonged to: two lines on one PC, or
a page started with another ``--db``, showed a heartbeat that was not theirs. Kept in the
database, the beat travels with the results it vouches for. The write is one short
``BEGIN IMMEDIATE`` transaction through the daemon's own engine, like every other write
of the daemon; readers use a deferred transaction and never wait for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite

from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.models import DaemonHeartbeat, utc_now

HEARTBEAT_FIELDS = ("line", "beat_at", "interval_s", "started_at", "pid", "host", "status")


@dataclass(frozen=True)
class Heartbeat:
    """A line's last beat as a reader sees it; ``age_s`` is measured at reading time."""

    line: str
    beat_at: datetime
    interval_s: float
    started_at: datetime
    pid: int
    host: str
    status: str
    age_s: float

    def stale(self, multiple: float) -> bool:
        """True when the beat is older than ``multiple`` of the promised interval."""
        return self.age_s > multiple * self.interval_s


def record_heartbeat(
    engine: Engine,
    *,
    interval_s: float,
    started_at: datetime,
    pid: int,
    host: str,
    status: str,
    now: datetime | None = None,
) -> None:
    """Replace the engine's line's heartbeat with one stamped ``now`` (default: the clock)."""
    values = dict(
        line=line_of(engine),
        beat_at=now or utc_now(),
        interval_s=interval_s,
        started_at=started_at,
        pid=pid,
        host=host,
        status=status,
    )
    dialect = postgresql if engine.dialect.name == "postgresql" else sqlite
    insert = dialect.insert(DaemonHeartbeat).values(**values)
    changed = {k: insert.excluded[k] for k in values if k != "line"}
    with engine.begin() as conn:
        conn.execute(insert.on_conflict_do_update(index_elements=["line"], set_=changed))


def read_heartbeats(engine: Engine, now: datetime | None = None) -> list[Heartbeat]:
    """Every line's last heartbeat, by line name (empty if no daemon has written one)."""
    columns = DaemonHeartbeat.__table__.c
    with reading(engine) as conn:
        rows = conn.execute(select(columns).order_by(columns.line)).mappings().all()
    at = now or utc_now()
    return [
        Heartbeat(
            **{k: row[k] for k in HEARTBEAT_FIELDS},
            age_s=max((at - row["beat_at"]).total_seconds(), 0.0),
        )
        for row in rows
    ]


def read_heartbeat(
    engine: Engine, now: datetime | None = None, line: str | None = None
) -> Heartbeat | None:
    """``line``'s last heartbeat, else the newest of any line; ``None`` if there is none."""
    beats = [b for b in read_heartbeats(engine, now) if line is None or b.line == line]
    return min(beats, key=lambda b: b.age_s, default=None)
