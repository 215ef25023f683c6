"""Line identity: every row names its line, rows stored before 0008 get the configured
one, and two lines on one database each work on their own rows only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, inspect, select, text

from padformer_edge.store import migrations
from padformer_edge.store.drift import has_open_drift, open_drift_events, record_drift
from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import read_heartbeat, read_heartbeats, record_heartbeat
from padformer_edge.store.history import Filters, list_inspections, prune, stats
from padformer_edge.store.lines import default_line, line_of, with_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    due_alerts,
    enqueue,
    requeue_interrupted,
)
from padformer_edge.store.reviews import review_counts, save_review
from padformer_edge.store.tables import metadata

from .seed import digest
from .test_migrations import finished_rows_at_an_old_revision

LINED = ("inspections", "alerts", "daemon_heartbeat", "reviews", "review_history",
         "drift_events", "reference_candidates")  # fmt: skip


def _lines(engine: Engine, table: str) -> list[str]:
    with engine.connect() as conn:
        return [r[0] for r in conn.execute(text(f"SELECT line FROM {table} ORDER BY 1"))]


def test_every_table_a_line_writes_has_a_line_column(engine: Engine) -> None:
    for table in LINED:
        assert "line" in {c["name"] for c in inspect(engine).get_columns(table)}, table
        assert metadata.tables[table].c.line.nullable is False


def test_rows_stored_before_get_the_line_the_migration_is_given(db_url: str) -> None:
    """A database at 0007 with results, an alert, a review and a heartbeat: upgraded by
    a daemon of line ``press-3`` every row says ``press-3``, and that daemon's next beat
    replaces the old heartbeat row rather than adding one."""
    engine = open_engine(db_url)
    upgrade(engine, "0007")
    ids = finished_rows_at_an_old_revision(engine, 2)
    now = datetime.now(UTC)
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO alerts (inspection_id, sink, payload, state, attempts, "
            "next_attempt_at, created_at) VALUES (:i, 'log', '{}', 'pending', 0, :t, :t)"),
            {"i": ids[1], "t": now.replace(tzinfo=None)},
        )  # fmt: skip
        conn.execute(text(
            "INSERT INTO daemon_heartbeat (id, beat_at, interval_s, started_at, pid, host, "
            "status) VALUES (1, :t, 5.0, :t, 7, 'pc', 'ok')"), {"t": now.replace(tzinfo=None)},
        )  # fmt: skip
    pressed = with_line(engine, "press-3")
    upgrade(pressed)
    assert migrations.current_revision(engine) == migrations.head_revision()
    for table in ("inspections", "alerts", "daemon_heartbeat"):
        assert set(_lines(engine, table)) == {"press-3"}, table
    save_review(engine, ids[0], ReviewVerdict.false_alarm, reviewer="ann")
    assert _lines(engine, "reviews") == _lines(engine, "review_history") == ["press-3"]
    record_heartbeat(pressed, interval_s=5.0, started_at=now, pid=8, host="pc", status="up")
    beats = read_heartbeats(engine)
    assert [(b.line, b.pid) for b in beats] == [("press-3", 8)]
    migrations.downgrade(engine, "0007")  # and back, keeping the rows
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM inspections")).scalar() == 2
    engine.dispose()


def test_without_a_line_the_host_name_is_the_line(engine: Engine) -> None:
    assert line_of(engine) == default_line()
    row = enqueue(engine, camera="c", product="p", source_path="/a.png", sha256=digest("a"),
                  size_bytes=1)  # fmt: skip
    assert row.line == default_line()


def test_two_lines_share_a_database_and_each_works_on_its_own_rows(engine: Engine) -> None:
    """The same path on two line PCs is two files; each line claims, requeues, alerts and
    watches drift on its own rows alone."""
    one, two = with_line(engine, "line-1"), with_line(engine, "line-2")
    sha = digest("same picture")
    rows = {e: enqueue(e, camera="cam", product="p", source_path="/srv/cam/a.png", sha256=sha,
                       size_bytes=3) for e in (one, two)}  # fmt: skip
    assert rows[one].id != rows[two].id
    again = enqueue(one, camera="cam", product="p", source_path="/srv/cam/a.png", sha256=sha,
                    size_bytes=3)  # fmt: skip
    assert again.id == rows[one].id  # seen twice by one line: still one row
    claimed = claim_batch(one, 10, fair=True)
    assert [(r.id, r.line) for r in claimed] == [(rows[one].id, "line-1")]
    assert [r.id for r in claim_batch(two, 10)] == [rows[two].id]
    assert requeue_interrupted(one, max_attempts=5) == (1, 0)  # line 2's row is not touched
    with engine.connect() as conn:
        states = dict(conn.execute(text("SELECT line, status FROM inspections")).all())
    assert states == {"line-1": "pending", "line-2": "processing"}

    alert = AlertRequest("log", {"kind": "anomaly"})
    outcome = DetectionOutcome(score=9.0, threshold=1.0, heatmap_path=None, model_sha256="m",
                               detect_ms=1.0, alerts=[alert])  # fmt: skip
    complete(two, rows[two].id, outcome)
    assert due_alerts(one) == []
    assert [(a.inspection_id, a.line) for a in due_alerts(two)] == [(rows[two].id, "line-2")]

    record_drift(two, camera="cam", product="p", kind="mean", statistic=1.0, p_value=0.001,
                 level=0.01, window_size=10, reason="r", inspection_id=rows[two].id,
                 requests=[])  # fmt: skip
    assert has_open_drift(two, "cam", "p") and not has_open_drift(one, "cam", "p")
    assert [e.line for e in open_drift_events(engine)] == ["line-2"]
    assert open_drift_events(engine, line="line-1") == []

    save_review(engine, rows[two].id, ReviewVerdict.true_defect, reviewer="ann")
    with engine.connect() as conn:
        assert review_counts(conn) == {("line-2", "p", "true_defect"): 1}


def test_history_filters_and_groups_by_line(engine: Engine) -> None:
    for line, count in (("east", 3), ("west", 2)):
        lined = with_line(engine, line)
        for n in range(count):
            enqueue(lined, camera="cam", product="p", source_path=f"/{n}.png",
                    sha256=digest(f"{line}{n}"), size_bytes=1)  # fmt: skip
    assert {r.line for r in list_inspections(engine, Filters(line="west"))} == {"west"}
    assert len(list_inspections(engine, Filters(line="east"))) == 3
    assert [(g.group, g.total) for g in stats(engine, "line")] == [("east", 3), ("west", 2)]
    assert [(g.group, g.total) for g in stats(engine, "all", line="west")] == [("all", 2)]
    west = with_line(engine, "west")
    for row in claim_batch(west, 10):
        complete(west, row.id, DetectionOutcome(1.0, 2.0, None, "m", 1.0))
    later = datetime.now(UTC) + timedelta(days=1)
    assert prune(engine, later, line="east").rows == 0  # east's rows are still queued
    assert prune(engine, later, line="west").rows == 2
    with engine.connect() as conn:
        left = conn.execute(select(func.count()).select_from(metadata.tables["inspections"]))
        assert left.scalar() == 3


def test_each_line_keeps_its_own_heartbeat(engine: Engine) -> None:
    at = datetime.now(UTC)
    for line, pid, age in (("a", 1, 30), ("b", 2, 2)):
        record_heartbeat(with_line(engine, line), interval_s=5.0, started_at=at, pid=pid,
                         host="pc", status="ok", now=at - timedelta(seconds=age))  # fmt: skip
    beats = read_heartbeats(engine, now=at)
    assert [(b.line, b.pid, b.age_s) for b in beats] == [("a", 1, 30.0), ("b", 2, 2.0)]
    newest = read_heartbeat(engine, now=at)
    assert newest is not None and newest.line == "b"
    only_a = read_heartbeat(engine, now=at, line="a")
    assert only_a is not None and only_a.pid == 1
