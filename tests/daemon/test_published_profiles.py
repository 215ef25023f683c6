"""Profiles published from the workstation, for real: a line daemon as a subprocess on
an empty profiles folder and a database with the real migrations (a SQLite file, and the
test PostgreSQL when ``PADFORMER_EDGE_TEST_PG_URL`` names one), the engineer's commands
run as the CLI runs them. The line pulls what it is assigned at start, takes up
a newly assigned version without a restart, goes back on ``rollback --line``, and
refuses a version whose stored bytes were changed while it keeps scoring.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import yaml
from sqlalchemy import func, select, update

from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.profile import load_profile
from padformer_edge.store.engine import open_engine
from padformer_edge.store.published_tables import (
    profile_assignments,
    published_files,
    published_profiles,
)
from padformer_edge.store.tables import inspections
from tests.cli_process import run_cli
from tests.daemon.harness import DaemonProcess, Site, make_profile, wait_for, write_image
from tests.detect_images import product_image
from tests.store.conftest import db_url  # noqa: F401  (the sqlite/postgresql parameter)

LINE = "line-a"
EVERYTHING_FLAGGED = -1.0
TARGET_S = 10.0  # the target: assigned to scoring on the line


def line_site(root: Path, database: str) -> Site:
    """A line's config (line name, camera, its own empty profiles folder) and the
    workstation's profile ``bolt`` (version 1, nothing flagged) beside it."""
    state = root / "state"
    make_profile(root / "workstation", "bolt", threshold=1e9)
    camera = root / "cameras" / "cam0"
    camera.mkdir(parents=True)
    config = {
        "line": LINE,
        "database": database,
        "profiles_dir": str(root / "line-profiles"),
        "cameras": [{"name": "cam0", "path": str(camera), "profile": "bolt"}],
        "intake": {"stable_ms": 100, "settle_timeout_s": 2.0, "rescan_interval_s": 30.0},
        "worker": {"max_batch": 8, "max_wait_ms": 50, "device": "cpu"},
    }
    path = root / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return Site(root, {"cam0": camera}, path, Path(database), state / "heatmaps")


def cli(site: Site, *args: str) -> str:
    config = yaml.safe_load(site.config.read_text())  # the database as the line names it
    done = run_cli(*args, "--db", config["database"],
                   env={"PADFORMER_EDGE_STATE_DIR": str(site.root / "state")})  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def drop(site: Site, first: int, count: int) -> int:
    for seed in range(first, first + count):
        write_image(site.cameras["cam0"] / f"part-{seed}.png", product_image(48, 64, 100 + seed))
    return first + count


def reloads(daemon: DaemonProcess) -> list[dict]:
    return [e for e in daemon.events() if e.get("event") == "daemon.profile_reloaded"]


def assigned_at(database: str) -> datetime:
    engine = open_engine(database)
    with engine.connect() as conn:
        at = conn.execute(select(func.max(profile_assignments.c.assigned_at))).scalar_one()
    engine.dispose()
    return at.replace(tzinfo=None)


def rows(database: str) -> list[dict]:
    engine = open_engine(database)
    with engine.connect() as conn:
        found = [dict(r._mapping) for r in conn.execute(select(inspections).order_by("id"))]
    engine.dispose()
    return found


def settled(database: str, expected: int) -> Callable[[], bool]:
    def check() -> bool:
        current = rows(database)
        return len(current) >= expected and all(r["status"].value == "done" for r in current)

    return check


def tamper(database: str, version: int, path: str) -> None:
    """Change one file's stored bytes after publishing, keeping its recorded sha256 and
    size (other bytes, as many)."""
    engine = open_engine(database)
    with engine.begin() as conn:
        published = select(published_profiles.c.id).where(published_profiles.c.version == version)
        file = (published_files.c.published_id == published.scalar_subquery()) & (
            published_files.c.path == path
        )
        size = conn.execute(select(published_files.c.size_bytes).where(file)).scalar_one()
        conn.execute(update(published_files).where(file).values(content=bytes(size)))
    engine.dispose()


def test_a_line_runs_what_the_workstation_publishes_and_assigns(
    db_url: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    site = line_site(tmp_path, db_url)
    workstation = str(tmp_path / "workstation")
    cli(site, "db", "upgrade", "--line", LINE)
    cli(site, "profile", "publish", "bolt", "--root", workstation, "--yes", "ana")
    cli(site, "profile", "assign", "bolt", "--line", LINE, "--yes", "ana")
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()  # version 1 pulled into the empty folder at start
        total = drop(site, 0, 2)
        wait_for(settled(db_url, total), 60, daemon, "version 1 results")

        # version 2 (every part flagged), published and assigned while the line runs
        pin_threshold(load_profile(workstation, "bolt"), EVERYTHING_FLAGGED)
        cli(site, "profile", "publish", "bolt", "--root", workstation, "--yes", "ana")
        cli(site, "profile", "assign", "bolt", "--line", LINE, "--yes", "ana")
        wait_for(lambda: len(reloads(daemon)) == 1, 60, daemon, "version 2 taken up")
        (reload,) = reloads(daemon)
        taken_up = datetime.fromisoformat(reload["timestamp"]).replace(tzinfo=None)
        elapsed = (taken_up - assigned_at(db_url)).total_seconds()
        print(f"version 2 scoring {elapsed:.2f} s after its assignment")
        assert elapsed <= TARGET_S
        total = drop(site, total, 2)
        wait_for(settled(db_url, total), 60, daemon, "version 2 results")

        # back to version 1 on this line, by the engineer's rollback
        out = cli(site, "profile", "rollback", "bolt", "--line", LINE, "--yes", "ana")
        assert "back on version 1" in out
        wait_for(lambda: len(reloads(daemon)) == 2, 60, daemon, "version 1 again")
        total = drop(site, total, 2)
        wait_for(settled(db_url, total), 60, daemon, "version 1 results again")

        # version 3, its reference changed in the database after publishing: refused
        pin_threshold(load_profile(workstation, "bolt"), 0.5)
        cli(site, "profile", "publish", "bolt", "--root", workstation, "--yes", "ana")
        tamper(db_url, 3, "references/0.png")
        cli(site, "profile", "assign", "bolt", "--line", LINE, "--yes", "ana")
        refused = lambda: [  # noqa: E731
            e for e in daemon.events() if e.get("event") == "daemon.profile_pull_refused"
        ]
        wait_for(lambda: bool(refused()), 60, daemon, "the refusal")
        total = drop(site, total, 2)
        wait_for(settled(db_url, total), 60, daemon, "results after the refusal")
        (error,) = refused()
        assert error["level"] == "error" and error["version"] == 3
        assert error["running_version"] == "1"
        assert "references/0.png does not match the sha256 recorded" in error["error"]
        assert "\n" not in error["error"]

        found = rows(db_url)
        assert [r["status"] for r in found] == ["done"] * 8
        assert [r["line"] for r in found] == [LINE] * 8
        assert [r["profile_version"] for r in found] == [1, 1, 2, 2, 1, 1, 1, 1]
        assert [bool(r["is_anomaly"]) for r in found] == [False] * 2 + [True] * 2 + [False] * 4
        assert len(reloads(daemon)) == 2
        assert daemon.terminate() == 0
    listed = cli(site, "profile", "assignments", "--json")
    assert '"version": 3' in listed and '"action": "assign"' in listed
