"""The daemon's heartbeat lives in the database it writes: one row, replaced by each
beat, read back with its age; two databases keep two heartbeats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import Engine, func, select

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import read_heartbeat, record_heartbeat
from padformer_edge.store.migrations import upgrade as upgrade_store
from padformer_edge.store.models import DaemonHeartbeat


def _beat(engine: Engine, status: str, at: datetime) -> None:
    record_heartbeat(engine, interval_s=5.0, started_at=at - timedelta(hours=1), pid=42,
                     host="line-pc", status=status, now=at)  # fmt: skip


def test_a_beat_is_stored_replaced_and_read_with_its_age(engine: Engine) -> None:
    assert read_heartbeat(engine) is None
    then = datetime.now(UTC) - timedelta(seconds=40)
    _beat(engine, "backlog 3", then)
    beat = read_heartbeat(engine, now=then + timedelta(seconds=16))
    assert beat is not None
    assert (beat.status, beat.pid, beat.host, beat.interval_s) == ("backlog 3", 42, "line-pc", 5.0)
    assert beat.beat_at == then and beat.age_s == 16.0
    assert beat.stale(3) and not beat.stale(4)  # 16 s against 15 s and 20 s
    _beat(engine, "backlog 0", then + timedelta(seconds=30))
    beat = read_heartbeat(engine, now=then + timedelta(seconds=31))
    assert beat is not None and beat.status == "backlog 0" and beat.age_s == 1.0
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(DaemonHeartbeat)).scalar() == 1


def test_each_database_reads_its_own_daemon(tmp_path: Path) -> None:
    line1, line2 = (open_engine(str(tmp_path / f"line{n}.sqlite3")) for n in (1, 2))
    for engine in (line1, line2):
        upgrade_store(engine)
    _beat(line1, "line 1 running", datetime.now(UTC))
    readers = [open_engine(str(tmp_path / f"line{n}.sqlite3"), read_only=True) for n in (1, 2)]
    first = read_heartbeat(readers[0])
    assert first is not None and first.status == "line 1 running"
    assert read_heartbeat(readers[1]) is None
    for engine in (line1, line2, *readers):
        engine.dispose()
