"""A framed profile's "no part" frames in the history: their own status, no score and
no verdict, their own count in the stats and on the health page, the found part's box
and cut flag stored with a scored frame, and a downgrade that keeps the rows."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text

from padformer_edge.store import migrations
from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import stats
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    enqueue,
)
from padformer_edge.web.queries import health, verdict_of

from .seed import digest


def _frame(engine, name: str) -> int:
    row = enqueue(engine, camera="c", product="p", source_path=f"/cam/{name}.jpg",
                  sha256=digest(name), size_bytes=10)  # fmt: skip
    return row.id


def _outcome(**fields) -> DetectionOutcome:
    return DetectionOutcome(score=fields.pop("score", 5.0), threshold=1.0, heatmap_path=None,
                            model_sha256=digest("m"), detect_ms=3.0, **fields)  # fmt: skip


def test_no_part_rows_are_their_own_status_and_count(db_url: str) -> None:
    engine = open_engine(db_url)
    migrations.upgrade(engine)
    empty, part = _frame(engine, "belt"), _frame(engine, "part")
    claim_batch(engine, 2)
    alert = AlertRequest(sink="log", payload={"reason": "x"})
    stored = complete(engine, empty, _outcome(score=float("nan"), no_part=True))
    assert stored.status.value == "no_part" and stored.score is None
    assert stored.is_anomaly is None and verdict_of(stored) == "no_part"
    scored = complete(engine, part, _outcome(part_box=(4, 8, 68, 72), part_cut=True,
                                             alerts=[alert]))  # fmt: skip
    assert scored.part_box == "4,8,68,72" and scored.part_cut is True and scored.is_anomaly
    (group,) = stats(engine)
    assert (group.total, group.done, group.no_part, group.anomalies) == (2, 1, 1, 1)
    (camera,) = health(engine, datetime(2000, 1, 1, tzinfo=UTC), 60.0).cameras
    assert (camera.inspected, camera.no_part, camera.anomalies) == (1, 1, 1)


def test_downgrade_keeps_no_part_rows_as_skipped(db_url: str) -> None:
    engine = open_engine(db_url)
    migrations.upgrade(engine)
    empty = _frame(engine, "belt")
    claim_batch(engine, 1)
    complete(engine, empty, _outcome(score=float("nan"), no_part=True))
    migrations.downgrade(engine, "0011")
    with engine.connect() as conn:
        status, error = conn.execute(text("SELECT status, error FROM inspections")).one()
    assert (status, error) == ("skipped", "no part in the frame")
    migrations.upgrade(engine)
