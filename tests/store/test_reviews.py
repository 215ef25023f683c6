"""Operators' reviews in the store, on every configured backend: saving, replacing,
refusing, filtering, exporting, counting, and the scores a recalibration reads."""

from __future__ import annotations

import csv
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select

from padformer_edge.errors import UserError
from padformer_edge.store.history import (
    RECORD_COLUMNS,
    Filters,
    export,
    get_inspection,
    list_inspections,
    prune,
    record,
)
from padformer_edge.store.lines import default_line
from padformer_edge.store.models import Review, ReviewVerdict
from padformer_edge.store.reviews import review_counts, reviewed_inspections, save_review

from .seed import T0, digest, seed_history

TD, FA = ReviewVerdict.true_defect, ReviewVerdict.false_alarm


@pytest.fixture
def seeded(engine: Engine, tmp_path: Path):
    return seed_history(engine, tmp_path / "heatmaps")


def test_a_review_is_stored_replaced_and_shown_with_its_row(engine: Engine, seeded) -> None:
    row_id = seeded.anomaly_ids[0]
    first = save_review(engine, row_id, FA, reviewer="ann", note="  dust on the lens ")
    assert first.replaced is None and first.note == "dust on the lens"
    later = datetime(2026, 3, 2, 8, tzinfo=UTC)
    second = save_review(engine, row_id, TD, reviewer="bob", note="", now=later)
    assert second.replaced is FA and second.note is None
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Review)).scalar() == 1
    fields = record(get_inspection(engine, row_id))
    assert {k: fields[k] for k in ("review", "review_note", "reviewed_by", "reviewed_at")} == {
        "review": "true_defect",
        "review_note": None,
        "reviewed_by": "bob",
        "reviewed_at": later.isoformat(),
    }
    assert list(fields) == RECORD_COLUMNS
    unreviewed = record(get_inspection(engine, seeded.done_ids[0]))
    assert unreviewed["review"] is None and unreviewed["reviewed_by"] is None


def test_bad_reviews_are_one_sentence(engine: Engine, seeded) -> None:
    with pytest.raises(UserError, match="no inspection 99999"):
        save_review(engine, 99999, TD, reviewer="ann")
    with engine.connect() as conn:
        failed = conn.execute(select(func.max(Review.inspection_id))).scalar()
    assert failed is None
    not_done = list_inspections(engine, Filters(camera="cam-c"), limit=5)
    for row in not_done:
        with pytest.raises(UserError, match=f"inspection {row.id} is {row.status.value}"):
            save_review(engine, row.id, FA, reviewer="ann")
    with pytest.raises(UserError, match="keep it to 2000"):
        save_review(engine, seeded.done_ids[0], FA, reviewer="ann", note="x" * 2001)
    with pytest.raises(UserError, match="reviewer name"):
        save_review(engine, seeded.done_ids[0], FA, reviewer="  ")


def test_history_filters_by_review_and_exports_it(engine: Engine, seeded) -> None:
    defects, alarms = seeded.anomaly_ids[:2], seeded.anomaly_ids[2:4]
    for row_id in defects:
        save_review(engine, row_id, TD, reviewer="ann")
    for row_id in alarms:
        save_review(engine, row_id, FA, reviewer="ann", note='glare, "bright"')

    def ids(wanted: str) -> set[int]:
        return {r.id for r in list_inspections(engine, Filters(review=wanted), limit=100)}

    assert ids("true_defect") == set(defects)
    assert ids("false_alarm") == set(alarms)
    assert ids("reviewed") == set(defects + alarms)
    everything = {r.id for r in list_inspections(engine, Filters(), limit=100)}
    assert ids("unreviewed") == everything - set(defects + alarms)
    out = io.StringIO()
    assert export(engine, out, "csv", Filters(review="false_alarm")) == 2
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    assert list(rows[0]) == RECORD_COLUMNS
    assert [(int(r["id"]), r["review"], r["review_note"]) for r in rows] == [
        (i, "false_alarm", 'glare, "bright"') for i in alarms
    ]
    out = io.StringIO()
    export(engine, out, "jsonl", Filters(since=T0))
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    by_id = {line["id"]: line["review"] for line in lines}
    assert {i for i, v in by_id.items() if v == "true_defect"} == set(defects)
    assert sum(v is None for v in by_id.values()) == len(lines) - 4


def test_counts_per_profile_and_scores_of_one_model(engine: Engine, seeded) -> None:
    # Seeded: ids 1-12 are product bolt, 13-20 nut; scores are 1..20 by id order.
    bolt, nut = seeded.done_ids[:12], seeded.done_ids[12:]
    save_review(engine, bolt[0], FA, reviewer="a")
    save_review(engine, bolt[1], FA, reviewer="a")
    save_review(engine, bolt[11], TD, reviewer="a")
    save_review(engine, nut[-1], TD, reviewer="a")
    with engine.connect() as conn:
        counts = review_counts(conn)
    line = default_line()  # the seed's engine has no line bound
    assert counts == {
        (line, "bolt", "false_alarm"): 2,
        (line, "bolt", "true_defect"): 1,
        (line, "nut", "true_defect"): 1,
    }
    found = reviewed_inspections(engine, "bolt")
    assert [(r.inspection_id, r.verdict, r.score) for r in found] == [
        (bolt[0], FA, 1.0), (bolt[1], FA, 2.0), (bolt[11], TD, 12.0)
    ]  # fmt: skip
    assert {r.model_sha256 for r in found} == {digest("model")}
    assert {r.reviewer for r in found} == {"a"}


def test_pruning_an_inspection_drops_its_review(engine: Engine, seeded) -> None:
    save_review(engine, seeded.done_ids[0], FA, reviewer="a")
    prune(engine, T0 + timedelta(hours=1))
    with engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(Review)).scalar() == 0
