"""``padformer-edge db`` and ``results`` as an operator runs them: real subprocesses."""

from __future__ import annotations

import csv
import getpass
import io
import json
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine

from padformer_edge.cli.app import main
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import head_revision, upgrade
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from tests.cli_process import run_cli

from .seed import Seeded, seed_history


@pytest.fixture
def seeded_db(db_url: str, engine: Engine, tmp_path: Path) -> tuple[str, Seeded]:
    """The seeded history on each configured backend, and the --db value naming it."""
    return db_url, seed_history(engine, tmp_path / "heatmaps")


def test_db_upgrade_and_current_through_the_environment(tmp_path: Path) -> None:
    env = {"PADFORMER_EDGE_DB": str(tmp_path / "line.sqlite3")}
    created = run_cli("db", "upgrade", env=env)
    assert created.returncode == 0, created.stderr
    assert f"at schema {head_revision()} (was empty)" in created.stdout
    current = run_cli("db", "current", env=env)
    assert current.stdout.strip().endswith(f"schema {head_revision()} (up to date)")


def test_list_json_and_csv_parse_back(seeded_db: tuple[str, Seeded]) -> None:
    db = seeded_db[0]
    result = run_cli("results", "list", "--db", db, "--anomalies", "--min-score", "17", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["score"] for r in rows] == [20.0, 19.0, 18.0, 17.0]
    as_csv = run_cli(
        "results",
        "list",
        "--db",
        db,
        "--camera",
        "cam-b",
        "--since",
        "2026-03-01T10:00",
        "--until",
        "2026-03-01T16:00",
        "--csv",
    )
    parsed = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [int(r["id"]) for r in parsed] == [16, 14, 12]
    assert set(parsed[0]) >= {"heatmap_path", "model_sha256", "queue_ms", "finished_at"}


def test_show_stats_export_and_prune(seeded_db: tuple[str, Seeded], tmp_path: Path) -> None:
    db, seeded = seeded_db
    anomaly = seeded.anomaly_ids[0]
    shown = json.loads(run_cli("results", "show", str(anomaly), "--db", db, "--json").stdout)
    assert shown["heatmap_path"] == str(seeded.heatmaps[anomaly])
    assert [a["sink"] for a in shown["alerts"]] == ["mqtt"]
    table = run_cli("results", "show", str(anomaly), "--db", db)
    assert "heatmap_path" in table.stdout and "mqtt" in table.stdout
    groups = json.loads(run_cli("results", "stats", "--db", db, "--by", "product", "--json").stdout)
    nut = next(g for g in groups if g["group"] == "nut")
    assert (nut["done"], nut["anomalies"], nut["score_p50"]) == (8, 5, 16.0)
    out = tmp_path / "history.jsonl"
    exported = run_cli("results", "export", "--db", db, "--format", "jsonl", str(out))
    assert exported.stdout.strip() == f"exported 25 inspections to {out}"
    assert len([json.loads(line) for line in out.read_text().splitlines()]) == 25
    pruned = run_cli("results", "prune", "--db", db, "--older-than", "30d", "--keep-anomalies")
    assert pruned.stdout.strip() == "pruned 15 inspections and 15 heatmap files"
    assert sum(p.exists() for p in seeded.heatmaps.values()) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["list", "--since", "yesterday"], "--since 'yesterday' is neither an ISO 8601 time"),
        (["list", "--status", "broken"], "--status 'broken' is not a status"),
        (["stats", "--by", "week"], "--by 'week' is not a grouping"),
        (["export", "--format", "xml", "out.xml"], "--format 'xml' is not supported"),
        (["prune", "--older-than", "soon"], "--older-than 'soon' is not an age"),
        (["show", "999"], "there is no inspection 999"),
        (["list", "--since", "1h", "--until", "2h"], "--since 1h is not before --until 2h"),
        (["list", "--review", "maybe"], "--review 'maybe' is not a review filter"),
        (["review", "1"], "give exactly one of --true-defect or --false-alarm"),
        (["review", "1", "--true-defect", "--false-alarm"], "exactly one of --true-defect"),
        (["review", "999", "--false-alarm"], "there is no inspection 999"),
        (["review", "22", "--false-alarm"], "inspection 22 is failed, not inspected"),
    ],
)
def test_bad_input_is_one_clear_line(
    seeded_db: tuple[str, Seeded],
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # In-process through the same entry point as the console script: a subprocess per
    # case would cost seconds each and test nothing more than the cases above do.
    monkeypatch.setattr(sys, "argv", ["padformer-edge", "results", *args, "--db", seeded_db[0]])
    with pytest.raises(SystemExit) as exit_info:
        main()
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_reads_refuse_a_database_that_is_not_at_head(tmp_path: Path) -> None:
    empty = tmp_path / "old.sqlite3"
    with open_engine(str(empty)).connect():  # a file with no schema, as before any upgrade
        pass
    result = run_cli("results", "list", "--db", str(empty))
    assert result.returncode == 2
    assert f"run 'padformer-edge db upgrade --db {empty}' first" in result.stderr


def test_review_list_and_export_by_review(seeded_db: tuple[str, Seeded], tmp_path: Path) -> None:
    db, seeded = seeded_db
    defect, alarm = seeded.anomaly_ids[0], seeded.anomaly_ids[1]
    done = run_cli("results", "review", str(defect), "--true-defect", "--note", "crack",
                   "--by", "ann", "--db", db)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shell = f"shell:{getpass.getuser()}"  # no users: the shell account signs, marked
    assert done.stdout.strip() == f"inspection {defect} reviewed as true_defect by ann ({shell})"
    first = run_cli("results", "review", str(alarm), "--true-defect", "--db", db)
    assert first.returncode == 0, first.stderr
    again = run_cli("results", "review", str(alarm), "--false-alarm", "--note", "glare",
                    "--db", db)  # fmt: skip
    assert "reviewed as false_alarm (was true_defect) by " in again.stdout
    listed = json.loads(run_cli("results", "list", "--review", "reviewed", "--json",
                                "--db", db).stdout)  # fmt: skip
    assert {r["id"]: (r["review"], r["review_note"]) for r in listed} == {
        defect: ("true_defect", "crack"),
        alarm: ("false_alarm", "glare"),
    }
    alarms = run_cli("results", "list", "--review", "false_alarm", "--json", "--db", db)
    assert [r["id"] for r in json.loads(alarms.stdout)] == [alarm]
    table = run_cli("results", "list", "--review", "true_defect", "--db", db).stdout
    assert "review" in table and "true_defect" in table
    out = tmp_path / "reviewed.csv"
    exported = run_cli("results", "export", "--db", db, "--review", "reviewed", str(out))
    assert exported.stdout.strip() == f"exported 2 inspections to {out}"
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [(int(r["id"]), r["review"], r["reviewed_by"]) for r in rows] == [
        (defect, "true_defect", f"ann ({shell})"),
        (alarm, "false_alarm", shell),  # no --by: the shell account alone
    ]


def test_the_list_table_shows_the_profile_version_that_scored_each_row(tmp_path: Path) -> None:
    """Issue 51: after a refresh or a rollback, which version scored a row is the first
    thing an engineer asks; the table has it (as ``version``), not only --json."""
    db = str(tmp_path / "versions.sqlite3")
    engine = open_engine(db)
    upgrade(engine)
    for n, version in enumerate((7, 8)):
        row = enqueue(engine, camera="cam", product="bolt", source_path=f"/cams/{n}.png",
                      sha256=str(n) * 64, size_bytes=1)  # fmt: skip
        claim_batch(engine, 1)
        complete(engine, row.id, DetectionOutcome(score=0.5, threshold=1.0, heatmap_path=None,
                                                  model_sha256="0" * 64, detect_ms=1.0,
                                                  profile_version=version))  # fmt: skip
    engine.dispose()
    table = run_cli("results", "list", "--db", db, env={"COLUMNS": "200"}).stdout
    rows = [[c.strip() for c in line.strip("│┃").split(line[0])] for line in table.splitlines()
            if line[:1] in "│┃"]  # fmt: skip
    header, *cells = rows
    at = header.index("version")
    assert header[at - 1] == "product" and [r[at] for r in cells] == ["8", "7"]  # newest first
