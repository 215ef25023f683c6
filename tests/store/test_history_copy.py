"""``db copy``: a line's SQLite history (a real file, the real migrations, written through
the daemon's own store functions) copied into the plant's database on every backend;
once: a second copy adds nothing, and every picture path still names its file."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, select, update

from padformer_edge.errors import UserError
from padformer_edge.store.drift import record_drift
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.history_copy import copy_history
from padformer_edge.store.lines import with_line
from padformer_edge.store.locations import resolve_stored, stored_path
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import due_alerts, enqueue, mark_alert_sent
from padformer_edge.store.reviews import save_review
from padformer_edge.store.tables import (
    alerts,
    drift_events,
    inspections,
    review_history,
    reviews,
)
from padformer_edge.store.vocabulary import ReviewVerdict
from tests.cli_process import run_cli

from .seed import digest, seed_history

LINE = "line-a"


def line_history(tmp_path: Path) -> tuple[Engine, Path]:
    """The line's SQLite file: the seeded history (20 done, 2 failed, 1 skipped, 2
    pending; 5 alerts, 3 of them sent), reviews and a drift event."""
    path = tmp_path / "line.sqlite3"
    engine = with_line(open_engine(str(path)), LINE)
    upgrade(engine)
    state = tmp_path / "state"
    seeded = seed_history(engine, state / "heatmaps")
    with engine.begin() as conn:  # recorded as the worker records them: state-relative
        for row_id, heatmap in seeded.heatmaps.items():
            conn.execute(
                update(inspections)
                .where(inspections.c.id == row_id)
                .values(heatmap_path=stored_path(heatmap, state))
            )
    for alert in due_alerts(engine)[:3]:
        mark_alert_sent(engine, alert.id)
    first, second = seeded.anomaly_ids[:2]
    save_review(engine, first, ReviewVerdict.false_alarm, reviewer="ana")
    save_review(engine, first, ReviewVerdict.true_defect, reviewer="bo")
    save_review(engine, second, ReviewVerdict.true_defect, reviewer="ana")
    record_drift(engine, camera="cam-a", product="bolt", kind="score", statistic=0.5,
                 p_value=1e-6, level=1e-4, window_size=100, reason="scores rose",
                 inspection_id=seeded.done_ids[-1], requests=[])  # fmt: skip
    return engine, path


def rows(conn, table, *order) -> list[dict]:
    return [dict(r._mapping) for r in conn.execute(select(table).order_by(*order))]


def test_a_line_history_is_copied_once(
    tmp_path: Path, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))  # the line's
    line, _ = line_history(tmp_path)
    plant = with_line(engine, "line-b")  # the plant already holds another line's rows
    for i in range(3):
        enqueue(plant, camera="cam-x", product="nut", source_path=f"/cams/{i}.png",
                sha256=digest(f"other{i}"), size_bytes=1)  # fmt: skip

    report = copy_history(line, engine)
    assert report.added == {
        "inspections": 23, "reviews": 2, "review_history": 3, "alerts": 3,
        "drift_events": 1,
    }  # fmt: skip
    assert report.left == {"inspections": 2, "alerts": 2}

    with reading(line) as src, reading(engine) as dst:
        source = [r for r in rows(src, inspections, inspections.c.id)
                  if r["status"].value != "pending"]  # fmt: skip
        copied = [r for r in rows(dst, inspections, inspections.c.id) if r["line"] == LINE]
        plant_id = {r["source_path"]: r["id"] for r in copied}
        by_id = {r["id"]: r for r in source}
        strip = lambda r: {k: v for k, v in r.items() if k != "id"}  # noqa: E731
        assert [strip(r) for r in copied] == [strip(r) for r in source]
        heatmaps = [r["heatmap_path"] for r in copied if r["heatmap_path"] is not None]
        assert len(heatmaps) == 20
        for recorded in heatmaps:  # relative to the line's state folder, as on the line
            assert not Path(recorded).is_absolute()
            assert resolve_stored(recorded).is_file()
        translated = {r["id"]: plant_id[r["source_path"]] for r in source}
        assert {translated[k] for k in by_id} == set(plant_id.values())
        for table, key in (
            (reviews, reviews.c.inspection_id),
            (review_history, review_history.c.id),
        ):
            before, after = rows(src, table, key), rows(dst, table, key)
            assert [translated[r["inspection_id"]] for r in before] == [
                r["inspection_id"] for r in after
            ]
            assert [(r["verdict"], r["reviewer"], r["line"]) for r in before] == [
                (r["verdict"], r["reviewer"], r["line"]) for r in after
            ]
        sent = [r for r in rows(dst, alerts, alerts.c.id)]
        assert [r["state"].value for r in sent] == ["sent"] * 3
        assert all(r["inspection_id"] in plant_id.values() for r in sent)
        (event,) = rows(dst, drift_events, drift_events.c.id)
        assert event["line"] == LINE and event["reason"] == "scores rose"

    again = copy_history(line, engine)
    assert sum(again.added.values()) == 0
    assert again.present == {key: n for key, n in report.added.items() if n}
    with reading(engine) as dst:
        assert len(rows(dst, inspections, inspections.c.id)) == 3 + 23
    line.dispose()


def test_a_copy_onto_itself_is_refused(tmp_path: Path) -> None:
    line, _ = line_history(tmp_path)
    with pytest.raises(UserError, match="writes the same database"):
        copy_history(line, line)
    line.dispose()


def test_db_copy_on_the_command_line(tmp_path: Path) -> None:
    line, path = line_history(tmp_path)
    line.dispose()
    plant = tmp_path / "plant.sqlite3"
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")}
    refused = run_cli("db", "copy", "--from", str(path), "--to", str(plant), env=env)
    assert refused.returncode == 2
    assert "has no schema yet" in refused.stderr and len(refused.stderr.splitlines()) == 1
    assert run_cli("db", "upgrade", "--db", str(plant), env=env).returncode == 0
    done = run_cli("db", "copy", "--from", str(path), "--to", str(plant), env=env)
    assert done.returncode == 0, done.stderr
    assert "23 inspections" in done.stdout and "left on the line: 2 inspections" in done.stdout
    again = run_cli("db", "copy", "--from", str(path), "--to", str(plant), env=env)
    assert again.returncode == 0, again.stderr
    assert "copied into" in again.stdout and ": nothing." in again.stdout
