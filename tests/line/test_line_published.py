"""A torch-free line install runs a published exported profile: the line's daemon starts
on an empty profiles folder, pulls the version assigned to its line from the database
(every file's sha256 checked), scores with it, and takes up the next version assigned
within the issue's target, all in processes that never load torch."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import yaml

from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.versions import save_profile
from tests.line.make_fixture import PROFILES
from tests.line.runner import run_cli
from tests.line.test_line_daemon import SCORE_RTOL, events, inspections, wait_for, watching

LINE = "line-7"
TARGET_S = 10.0  # the target: assigned to scoring on the line
NOTHING_FLAGGED = 1e9


def cli(site: Path, *args: str) -> str:
    done = run_cli(site, *args, "--db", str(site / "state" / "results.sqlite3"))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def line_config(site: Path, profile: str) -> Path:
    camera = site / "camera"
    camera.mkdir()
    config = {
        "line": LINE,
        "database": str(site / "state" / "results.sqlite3"),
        "profiles_dir": str(site / "line-profiles"),
        "cameras": [{"name": "cam0", "path": str(camera), "profile": profile}],
        "intake": {"stable_ms": 100, "settle_timeout_s": 2.0, "rescan_interval_s": 30.0},
        "worker": {"max_batch": 4, "max_wait_ms": 50, "device": "cpu"},
    }
    path = site / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_a_line_pulls_and_runs_a_published_exported_profile(line_site: Path) -> None:
    site = json.loads((line_site / "site.json").read_text())
    name = PROFILES["onnxruntime"]
    workstation = line_site / "state" / "profiles"
    config = line_config(line_site, name)
    (line_site / "model.safetensors").unlink()  # the line has no checkpoint, only the database
    cli(line_site, "db", "upgrade", "--line", LINE)
    cli(line_site, "profile", "publish", name, "--root", str(workstation), "--yes", "ana")
    cli(line_site, "profile", "assign", name, "--line", LINE, "--yes", "ana")
    database = line_site / "state" / "results.sqlite3"
    with watching(line_site, config) as (process, log):
        queries = sorted((line_site / "queries").iterdir())
        for path in queries:
            shutil.copyfile(path, line_site / "camera" / path.name)

        def done(count: int) -> Callable[[], bool]:
            return lambda: (
                len(rows := inspections(database)) == count
                and all(r["status"] == "done" for r in rows)
            )

        wait_for(done(len(queries)), 120, log, process)

        # version 2 (nothing flagged) made, published and assigned while the line runs
        profile = load_profile(workstation, name)
        assert profile.calibration is not None
        calibration = profile.calibration.model_copy(update={"threshold": NOTHING_FLAGGED})
        save_profile(profile, profile.config.model_copy(
            update={"version": 2, "calibration": calibration}
        ))  # fmt: skip
        cli(line_site, "profile", "publish", name, "--root", str(workstation), "--yes", "ana")
        cli(line_site, "profile", "assign", name, "--line", LINE, "--yes", "ana")
        reloaded = lambda: [  # noqa: E731
            e for e in events(log) if e.get("event") == "daemon.profile_reloaded"
        ]
        wait_for(lambda: bool(reloaded()), 120, log, process)
        (reload,) = reloaded()
        with sqlite3.connect(database) as conn:
            (at,) = conn.execute("SELECT max(assigned_at) FROM profile_assignments").fetchone()
        taken_up = datetime.fromisoformat(reload["timestamp"]).replace(tzinfo=None)
        elapsed = (taken_up - datetime.fromisoformat(at)).total_seconds()
        print(f"version 2 scoring {elapsed:.2f} s after its assignment")
        assert elapsed <= TARGET_S
        shutil.copyfile(line_site / "queries" / "defect.png", line_site / "camera" / "again.png")
        wait_for(done(len(queries) + 1), 120, log, process)

    by_name = {Path(r["source_path"]).name: r for r in inspections(database)}
    for image, torch_score in site["torch_scores"].items():
        row = by_name[image]
        assert row["profile_version"] == 1 and row["line"] == LINE
        assert abs(row["score"] - torch_score) <= SCORE_RTOL * abs(torch_score)
        assert bool(row["is_anomaly"]) == (torch_score > site["threshold"])
    again = by_name["again.png"]
    assert (again["profile_version"], again["threshold"]) == (2, NOTHING_FLAGGED)
    assert not again["is_anomaly"]
    pulled = line_site / "line-profiles" / name
    assert load_profile(pulled.parent, name).config.version == 2
    assert (pulled / "versions" / "1" / "profile.yaml").is_file()


NEW_PC_TARGET_S = 20.0  # the target: watch started to the first image scored


def test_a_new_line_pc_starts_on_the_version_the_plant_assigns(line_site: Path) -> None:
    """A new line PC as docs/deploy.md sets one up: ``plant_database`` names the plant's
    PostgreSQL (a server this test owns), where the workstation published the profile and
    assigned it; the line's own SQLite file does not exist yet and its profiles folder is
    empty. ``doctor`` says the version will be pulled, ``watch`` pulls it from the plant
    (not from the line's own database) and scores an image waiting in the camera folder."""
    from tests.pg_cluster import own_cluster

    name = PROFILES["onnxruntime"]
    workstation = line_site / "state" / "profiles"
    (line_site / "model.safetensors").unlink()  # the line has no checkpoint
    config = line_config(line_site, name)
    settings = yaml.safe_load(config.read_text())
    local = line_site / "new-pc" / "results.sqlite3"
    settings["database"] = str(local)
    with own_cluster() as plant:
        settings["plant_database"] = plant.url
        config.write_text(yaml.safe_dump(settings))
        for args in (
            ("db", "upgrade"),
            ("profile", "publish", name, "--root", str(workstation), "--yes", "ana"),
            ("profile", "assign", name, "--line", LINE, "--yes", "ana"),
        ):
            done = run_cli(line_site, *args, "--db", plant.url)
            assert done.returncode == 0, done.stdout + done.stderr
        doctor = run_cli(line_site, "doctor", "--config", str(config), "--json")
        (finding,) = [f for f in json.loads(doctor.stdout) if f["subject"] == f"profile '{name}'"]
        assert finding["ok"], finding
        assert f"version 1 is assigned to line '{LINE}'" in finding["detail"]
        shutil.copyfile(line_site / "queries" / "defect.png", line_site / "camera" / "first.png")
        started = time.monotonic()
        with watching(line_site, config) as (process, log):
            scored = lambda: [r for r in inspections(local) if r["status"] == "done"]  # noqa: E731
            wait_for(lambda: bool(scored()), 120, log, process)
            elapsed = time.monotonic() - started
            print(f"new line PC: watch started to its first image scored in {elapsed:.2f} s")
            (row,) = scored()
            assert (row["profile_version"], row["line"]) == (1, LINE)
            assert elapsed <= NEW_PC_TARGET_S
    assert load_profile(line_site / "line-profiles", name).config.version == 1
