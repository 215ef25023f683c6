"""History queries on a seeded database, on every configured backend."""

from __future__ import annotations

import csv
import io
import json
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, insert, select

from padformer_edge.errors import UserError
from padformer_edge.store.history import (
    Filters,
    export,
    get_inspection,
    list_inspections,
    prune,
    stats,
)
from padformer_edge.store.models import Alert, Inspection, Status
from padformer_edge.store.timespec import parse_age, parse_time

from .seed import T0, THRESHOLD, digest, nearest_rank, seed_history


@pytest.fixture
def seeded(engine: Engine, tmp_path: Path):
    return seed_history(engine, tmp_path / "heatmaps")


def test_list_is_newest_first_and_filters(engine: Engine, seeded) -> None:
    newest = list_inspections(engine, Filters(), limit=3)
    assert [r.camera for r in newest] == ["cam-c"] * 3
    cam_a = list_inspections(engine, Filters(camera="cam-a"), limit=100)
    assert len(cam_a) == 10 and [r.discovered_at for r in cam_a] == sorted(
        (r.discovered_at for r in cam_a), reverse=True
    )
    window = Filters(since=T0 + timedelta(hours=5), until=T0 + timedelta(hours=8))
    assert [r.score for r in list_inspections(engine, window)] == [8.0, 7.0, 6.0]
    anomalies = list_inspections(engine, Filters(anomalies_only=True, product="nut"))
    assert sorted(r.id for r in anomalies) == seeded.anomaly_ids
    assert {r.score for r in list_inspections(engine, Filters(min_score=19))} == {19.0, 20.0}
    failed = list_inspections(engine, Filters(status=Status.failed))
    assert len(failed) == 2 and {r.error for r in failed} == {"image is truncated"}


def test_get_returns_every_field_and_its_alerts(engine: Engine, seeded) -> None:
    row = get_inspection(engine, seeded.anomaly_ids[0])
    assert row.heatmap_path == str(seeded.heatmaps[row.id]) and row.threshold == THRESHOLD
    (alert,) = row.alerts
    assert json.loads(alert.payload) == {"id": row.id, "score": row.score}
    assert get_inspection(engine, 10_000) is None


def test_stats_counts_and_percentiles(engine: Engine, seeded) -> None:
    (overall,) = stats(engine)
    scores = [float(i + 1) for i in range(20)]
    times = [100.0 + i for i in range(20)]
    assert (
        overall.total,
        overall.done,
        overall.anomalies,
        overall.failed,
        overall.skipped,
        overall.queued,
    ) == (25, 20, 5, 2, 1, 2)
    assert overall.anomaly_rate == 5 / 20
    assert (overall.score_p50, overall.score_p95) == (
        nearest_rank(scores, 50),
        nearest_rank(scores, 95),
    )
    assert (overall.detect_ms_p50, overall.detect_ms_p95) == (
        nearest_rank(times, 50),
        nearest_rank(times, 95),
    )
    by_camera = {g.group: g for g in stats(engine, "camera")}
    assert by_camera["cam-a"].score_p50 == nearest_rank(scores[0::2], 50)
    assert by_camera["cam-b"].score_p95 == nearest_rank(scores[1::2], 95)
    assert by_camera["cam-c"].score_p50 is None and by_camera["cam-c"].anomaly_rate is None
    by_hour = stats(engine, "hour", since=T0)
    assert by_hour[0].group == "2026-03-01T00:00Z" and by_hour[0].total == 1
    by_day = {g.group: g.total for g in stats(engine, "day")}
    assert by_day["2026-03-01"] == 20
    (recent,) = stats(engine, since=datetime.now(UTC) - timedelta(hours=2))
    assert recent.total == 5 and recent.done == 0


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_parses_back(engine: Engine, seeded, fmt: str) -> None:
    out = io.StringIO()
    assert export(engine, out, fmt, Filters()) == 25
    text = out.getvalue()
    rows = (
        list(csv.DictReader(io.StringIO(text)))
        if fmt == "csv"
        else [json.loads(line) for line in text.splitlines()]
    )
    assert [int(r["id"]) for r in rows] == list(range(1, 26))
    assert float(rows[19]["score"]) == 20.0 and rows[19]["status"] == "done"
    assert datetime.fromisoformat(rows[0]["discovered_at"]) == T0
    since = io.StringIO()
    assert export(engine, since, fmt, Filters(since=T0 + timedelta(hours=18))) == 7


def _bulk_rows(engine: Engine, start: int, stop: int) -> None:
    with engine.begin() as conn:
        conn.execute(
            insert(Inspection),
            [
                dict(
                    line="line-1",
                    camera="cam",
                    product="p",
                    source_path=f"/bulk/{i}.png",
                    sha256=digest(str(i)),
                    size_bytes=i,
                    status=Status.done,
                    attempts=1,
                    score=float(i),
                    threshold=1.0,
                    is_anomaly=True,
                    discovered_at=T0,
                )
                for i in range(start, stop)
            ],
        )


class _Sink(io.TextIOBase):
    """Discards what it is given, so only the exporter's own memory is measured."""

    def write(self, text: str) -> int:
        return len(text)


def _export_peak_bytes(engine: Engine) -> int:
    tracemalloc.start()
    try:
        export(engine, _Sink(), "jsonl", Filters())
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_export_memory_does_not_grow_with_rows(engine: Engine) -> None:
    _bulk_rows(engine, 0, 1_000)
    small = _export_peak_bytes(engine)
    _bulk_rows(engine, 1_000, 10_000)
    large = _export_peak_bytes(engine)
    # Ten times the rows; a buffering exporter would need about ten times the memory.
    assert large < 2 * small, (small, large)


def test_prune_deletes_rows_alerts_and_heatmaps_together(engine: Engine, seeded) -> None:
    result = prune(engine, T0 + timedelta(hours=17), keep_anomalies=True)
    # Rows 1..17 are older than the cutoff; 16 and 17 are anomalies and stay.
    assert (result.rows, result.heatmaps_deleted, result.heatmaps_missing) == (15, 15, 0)
    remaining = {r.id for r in list_inspections(engine, Filters(), limit=100)}
    assert remaining == set(range(16, 26))
    assert all(not seeded.heatmaps[i].exists() for i in range(1, 16))
    assert all(seeded.heatmaps[i].exists() for i in range(16, 21))
    everything = prune(engine, datetime.now(UTC) + timedelta(days=1))
    # Pending rows are queued work and survive; failed and skipped rows are history.
    assert everything.rows == 8 and everything.heatmaps_deleted == 5
    assert {r.status for r in list_inspections(engine, Filters())} == {Status.pending}
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Alert)).scalar() == 0


def test_times_parse_as_iso_or_age() -> None:
    now = datetime(2026, 5, 1, 12, tzinfo=UTC)
    assert parse_time("2h", now=now) == datetime(2026, 5, 1, 10, tzinfo=UTC)
    assert parse_time("7d", now=now) == datetime(2026, 4, 24, 12, tzinfo=UTC)
    assert parse_time("2026-05-01T08:00") == datetime(2026, 5, 1, 8, tzinfo=UTC)
    assert parse_time("2026-05-01T08:00+02:00") == datetime(2026, 5, 1, 6, tzinfo=UTC)
    assert parse_age("30d") == timedelta(days=30)
    with pytest.raises(UserError, match="--since 'yesterday'"):
        parse_time("yesterday")
    with pytest.raises(UserError, match="--older-than '2026-01-01' is not an age"):
        parse_age("2026-01-01")
