"""A plant's history in PostgreSQL for the page benchmarks: several lines' finished
inspections, with their reviews, alerts, drift events and heartbeats.

Each line gets the rows of ``web_pages.fill`` (8 cameras, 3 products, 5 % anomalous,
spread over the 30 days before now, lines interleaved in time as their daemons would
forward them), written with PostgreSQL's ``COPY``: a plant of 600,000 rows through
``INSERT`` statements takes longer than the load it is filled for. Reviews (one row in
``REVIEW_EVERY``), alerts (one anomaly in ``ALERT_EVERY``) and drift events are made
from those rows by ``INSERT ... SELECT`` inside the database. The database given must
hold no inspections: the benchmark owns it for the run and empties it afterwards
(``empty``).
"""

from __future__ import annotations

import io
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, func, select, text

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import record_heartbeat
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import current_revision, downgrade, upgrade
from padformer_edge.store.tables import inspections

REVIEW_EVERY = 100
ALERT_EVERY = 10  # of the anomalous rows
DRIFTS_PER_LINE = 8
COLUMNS = ("line", "camera", "product", "source_path", "sha256", "size_bytes", "status",
           "attempts", "score", "threshold", "is_anomaly", "heatmap_path", "model_sha256",
           "detect_ms", "queue_ms", "discovered_at", "started_at", "finished_at")  # fmt: skip


def line_names(count: int) -> list[str]:
    return [f"press-{n}" for n in range(1, count + 1)]


def _csv_rows(lines: list[str], rows: int, first: int, last: int, start: datetime) -> str:
    """Rows ``first``..``last`` (counted over every line) as COPY's CSV."""
    step = timedelta(days=30) / (rows * len(lines))
    out = io.StringIO()
    for k in range(first, last):
        line, i = lines[k % len(lines)], k // len(lines)
        at = (start + step * k).isoformat()
        hashed = i * 7919 % 1000
        out.write(
            f"{line},cam-{i % 8},{('bolt', 'nut', 'gear')[i % 3]},/cams/{i}.png,{k:064x},"
            f"500000,done,1,{hashed / 100.0},9.5,{'t' if hashed >= 950 else 'f'},"
            f"heatmaps/{i}.png,{'0' * 64},{30.0 + (i % 97) / 10.0},5.0,{at},{at},{at}\n"
        )
    return out.getvalue()


def fill_plant(url: str, lines: list[str], rows: int, chunk: int = 50_000) -> float:
    """``rows`` inspections per line and what goes with them into the empty database
    ``url`` (migrated to head first); returns seconds taken (not a reported figure)."""
    engine = open_engine(url)
    upgrade(engine)
    with engine.connect() as conn:
        if conn.execute(select(func.count()).select_from(inspections)).scalar():
            engine.dispose()
            raise SystemExit(f"{url} already holds inspections; give the benchmark an empty "
                             "database (it fills it and empties it afterwards).")  # fmt: skip
    started = time.perf_counter()
    start = datetime.now(UTC) - timedelta(days=30)
    total = rows * len(lines)
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        copy = f"COPY inspections ({', '.join(COLUMNS)}) FROM STDIN WITH (FORMAT csv)"
        for first in range(0, total, chunk):
            cursor.copy_expert(copy, io.StringIO(_csv_rows(lines, rows, first,
                                                           min(first + chunk, total), start)))
        raw.commit()
    finally:
        raw.close()
    _derived(engine, lines)
    engine.dispose()
    return time.perf_counter() - started


def _derived(engine: Engine, lines: list[str]) -> None:
    """Reviews, alerts, drift events and a heartbeat per line, from the filled rows."""
    with engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO reviews (inspection_id, line, verdict, reviewer, reviewed_at) "
            "SELECT id, line, CASE WHEN (id / :every) % 2 = 1 THEN 'true_defect' "
            "ELSE 'false_alarm' END, 'bench', now() FROM inspections WHERE id % :every = 1"
        ), {"every": REVIEW_EVERY})  # fmt: skip
        conn.execute(text(
            "INSERT INTO alerts (inspection_id, line, sink, payload, state, attempts, "
            "next_attempt_at, created_at, sent_at) SELECT id, line, 'hook', '{}', 'sent', 1, "
            "discovered_at, discovered_at, discovered_at FROM inspections "
            "WHERE is_anomaly AND id % :every = 0"
        ), {"every": ALERT_EVERY})  # fmt: skip
        for line in lines:
            conn.execute(text(
                "INSERT INTO drift_events (line, camera, product, kind, statistic, p_value, "
                "level, window_size, reason, inspection_id, raised_at) "
                "SELECT line, camera, product, 'ks', 0.4, 0.001, 0.01, 50, "
                "'scores drifted above the calibration', id, discovered_at "
                "FROM inspections WHERE line = :line AND is_anomaly "
                "ORDER BY id DESC LIMIT :n"
            ), {"line": line, "n": DRIFTS_PER_LINE})  # fmt: skip
        conn.execute(text("ANALYZE"))
    now = datetime.now(UTC)
    for line in lines:
        record_heartbeat(with_line(engine, line), interval_s=5.0, started_at=now, pid=1,
                         host=f"{line}-pc", status="ok", now=now)  # fmt: skip


def empty(url: str) -> None:
    """Drop every table the benchmark made (the schema's downgrade to nothing)."""
    engine = open_engine(url)
    if current_revision(engine) is not None:
        downgrade(engine, "base")
    engine.dispose()
