"""``results`` and ``alerts`` read the database named by the daemon config, as a real
process against a real migrated SQLite file; ``--db`` still wins over ``--config``."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import enqueue
from tests.cli_process import run_cli, run_cli_modules

HEAVY = {"torch", "timm", "kornia", "cv2"}


def make_database(path: Path, camera: str) -> None:
    engine = open_engine(str(path))
    upgrade(engine)
    enqueue(
        engine, camera=camera, product="bolt", source_path=f"/{camera}/a.png", sha256="0" * 64,
        size_bytes=1,
    )  # fmt: skip
    engine.dispose()


def test_results_and_alerts_take_the_database_from_the_daemon_config(tmp_path: Path) -> None:
    line = tmp_path / "line.sqlite3"
    make_database(line, "line-cam")
    other = tmp_path / "other.sqlite3"
    make_database(other, "other-cam")
    config = tmp_path / "daemon.yaml"
    camera = {"name": "cam", "path": str(tmp_path / "cam"), "profile": "bolt"}
    config.write_text(yaml.safe_dump({"database": str(line), "cameras": [camera]}))

    listed, modules = run_cli_modules(
        "results", "list", "--config", str(config), "--json", record=tmp_path / "m"
    )
    assert listed.returncode == 0, listed.stderr
    assert [row["camera"] for row in json.loads(listed.stdout)] == ["line-cam"]
    assert not modules & HEAVY, sorted(modules & HEAVY)

    overridden = run_cli("results", "list", "--config", str(config), "--db", str(other), "--json")
    assert [row["camera"] for row in json.loads(overridden.stdout)] == ["other-cam"]

    alerts = run_cli("alerts", "list", "--config", str(config), "--json")
    assert alerts.returncode == 0, alerts.stderr
    assert json.loads(alerts.stdout) == []

    stats = run_cli("results", "stats", "-c", str(config), "--json")
    assert json.loads(stats.stdout)[0]["total"] == 1


def test_a_config_with_an_unknown_key_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "daemon.yaml"
    camera = {"name": "cam", "path": str(tmp_path), "profile": "bolt"}
    config.write_text(yaml.safe_dump({"databse": "x.sqlite3", "cameras": [camera]}))
    result = run_cli("results", "list", "--config", str(config))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "databse" in result.stderr
