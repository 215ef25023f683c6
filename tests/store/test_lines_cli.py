"""``--line`` on the history commands, over a database two lines share, and ``db upgrade
--line`` naming the line of the rows stored before schema 0008: real subprocesses."""

from __future__ import annotations

import json
from pathlib import Path

from sqlalchemy import Engine, text

from padformer_edge.store.drift import record_drift
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    enqueue,
)
from tests.cli_process import run_cli

from .seed import digest
from .test_migrations import finished_rows_at_an_old_revision


def two_lines(engine: Engine) -> dict[str, list[int]]:
    """Line ``east`` with three inspected rows, ``west`` with two, each row alerted, and
    a drift on west's camera."""
    ids: dict[str, list[int]] = {}
    for line, count in (("east", 3), ("west", 2)):
        lined = with_line(engine, line)
        for n in range(count):
            enqueue(lined, camera="cam", product="bolt", source_path=f"/srv/cam/{n}.png",
                    sha256=digest(f"{line}{n}"), size_bytes=1)  # fmt: skip
        rows = claim_batch(lined, 10)
        alert = AlertRequest("log", {"kind": "anomaly"})
        for row in rows:
            complete(lined, row.id, DetectionOutcome(9.0, 1.0, None, "m", 1.0, [alert]))
        ids[line] = [row.id for row in rows]
    record_drift(with_line(engine, "west"), camera="cam", product="bolt", kind="mean",
                 statistic=1.0, p_value=0.001, level=0.01, window_size=10, reason="shifted",
                 inspection_id=ids["west"][0], requests=[])  # fmt: skip
    return ids


def test_the_history_commands_filter_and_group_by_line(db_url: str, engine: Engine) -> None:
    ids = two_lines(engine)
    listed = run_cli("results", "list", "--db", db_url, "--line", "west", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert sorted(r["id"] for r in rows) == sorted(ids["west"])
    assert {r["line"] for r in rows} == {"west"}

    grouped = run_cli("results", "stats", "--db", db_url, "--by", "line", "--json")
    assert [(g["group"], g["total"]) for g in json.loads(grouped.stdout)] == [
        ("east", 3), ("west", 2)
    ]  # fmt: skip

    alerts = run_cli("alerts", "list", "--db", db_url, "--line", "east", "--json")
    assert alerts.returncode == 0, alerts.stderr
    found = json.loads(alerts.stdout)
    assert sorted(a["inspection_id"] for a in found) == sorted(ids["east"])
    assert {a["line"] for a in found} == {"east"}

    drift = run_cli("alerts", "drift", "--db", db_url, "--line", "east", "--json")
    assert json.loads(drift.stdout) == []
    drift = run_cli("alerts", "drift", "--db", db_url, "--line", "west", "--json")
    assert [(e["line"], e["reason"]) for e in json.loads(drift.stdout)] == [("west", "shifted")]


def test_db_upgrade_gives_the_rows_stored_before_the_line_named(tmp_path: Path) -> None:
    path = tmp_path / "line.sqlite3"
    engine = open_engine(str(path))
    upgrade(engine, "0007")
    finished_rows_at_an_old_revision(engine, 2)
    engine.dispose()
    done = run_cli("db", "upgrade", "--db", str(path), "--line", "press-3")
    assert done.returncode == 0, done.stderr
    engine = open_engine(str(path))
    with engine.connect() as conn:
        lines = conn.execute(text("SELECT DISTINCT line FROM inspections")).scalars().all()
    engine.dispose()
    assert lines == ["press-3"]
