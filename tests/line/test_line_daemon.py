"""The line install's path with no torch: the daemon scores a camera folder into SQLite,
results, alerts and the page read it, and a changed graph is refused. Every command runs
in a subprocess that cannot import torch and reports that it never loaded it."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.line.make_fixture import COMPARE_PROFILES, FRAMED_PROFILE, PROFILES
from tests.line.no_torch import BLOCKED
from tests.line.runner import REPO, command, line_env, run_cli

SCORE_RTOL = 1e-4  # the parity target for image scores
LINE_VENV = os.environ.get("PADFORMER_LINE_VENV") == "1"


def write_config(site: Path, profile: str = "bolt") -> Path:
    camera = site / "camera"
    camera.mkdir()
    config = {
        "database": str(site / "state" / "results.sqlite3"),
        "cameras": [{"name": "cam0", "path": str(camera), "profile": profile}],
        "intake": {"stable_ms": 100, "settle_timeout_s": 2.0, "rescan_interval_s": 30.0},
        "worker": {"max_batch": 4, "max_wait_ms": 50, "device": "cpu"},
    }
    path = site / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def inspections(database: Path) -> list[dict]:
    if not database.exists():
        return []
    conn = sqlite3.connect(f"file:{database}?mode=ro", uri=True, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM inspections ORDER BY id")]
    except sqlite3.OperationalError:
        return []
    finally:
        conn.close()


def wait_for(condition, timeout: float, log: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if process.poll() is not None:
            raise AssertionError(f"daemon exited early:\n{log.read_text()[-4000:]}")
        time.sleep(0.2)
    raise AssertionError(f"timed out:\n{log.read_text()[-4000:]}")


def events(log: Path) -> list[dict]:
    out = []
    for line in log.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def test_torch_cannot_be_imported_on_the_line_path():
    """In CI's line venv torch is not installed at all; elsewhere the blocker the line
    tests run under must make the import fail just the same."""
    if LINE_VENV:
        for name in BLOCKED:
            assert importlib.util.find_spec(name) is None, f"{name} is installed in the line venv"
    probe = (
        "import sys, tests.line.no_torch as n\n"
        "sys.meta_path.insert(0, n.BlockTorch())\n"
        "import torch\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr


@contextmanager
def watching(site: Path, config: Path) -> Iterator[tuple[subprocess.Popen, Path]]:
    """The line daemon on ``config``, waited for until ready: (its process, its JSON log).
    When the block ends it is stopped with SIGTERM and must exit 0 having never loaded
    torch; if the block fails it is killed."""
    report, log = site / "daemon-report.json", site / "daemon.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command("--log-format", "json", "watch", "--config", str(config)),
            cwd=REPO, env=line_env(site, report), stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        ready = lambda: any(e.get("event") == "daemon.ready" for e in events(log))  # noqa: E731
        wait_for(ready, 120, log, process)
        yield process, log
        process.send_signal(signal.SIGTERM)
        assert process.wait(60) == 0, log.read_text()[-4000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert json.loads(report.read_text())["loaded"] == []


@pytest.mark.parametrize("runtime", sorted(PROFILES))
def test_daemon_scores_a_camera_folder_into_sqlite_without_torch(line_site, runtime):
    site = json.loads((line_site / "site.json").read_text())
    config = write_config(line_site, PROFILES[runtime])
    (line_site / "model.safetensors").unlink()  # the profile folder is all a line PC needs
    with watching(line_site, config) as (process, log):
        queries = sorted((line_site / "queries").iterdir())
        for path in queries:
            shutil.copyfile(path, line_site / "camera" / path.name)
        database = line_site / "state" / "results.sqlite3"
        finished = lambda: (  # noqa: E731
            len(rows := inspections(database)) == len(queries)
            and all(r["status"] == "done" for r in rows)
        )
        wait_for(finished, 120, log, process)
    by_name = {Path(r["source_path"]).name: r for r in inspections(database)}
    for name, torch_score in site["torch_scores"].items():
        row = by_name[name]
        assert row["score"] == pytest.approx(torch_score, rel=SCORE_RTOL)
        assert bool(row["is_anomaly"]) == (torch_score > site["threshold"])
    # the history commands read the same database, torch-free too
    listed = run_cli(line_site, "results", "list", "--db", str(database), "--json")
    assert listed.returncode == 0, listed.stderr
    assert {Path(r["source_path"]).name for r in json.loads(listed.stdout)} == set(by_name)
    alerts = run_cli(line_site, "alerts", "list", "--db", str(database), "--json")
    assert alerts.returncode == 0, alerts.stderr


def test_the_line_daemon_raises_an_image_drift_without_torch(line_site):
    """The image statistics are computed torch-free: a profile whose calibration kept
    the statistics of a much darker line (and a threshold nothing reaches) raises an
    ``image`` drift on the first window of this camera's images, in a process that never
    loads torch."""
    profile = PROFILES["onnxruntime"]
    config_path = write_config(line_site, profile)
    config = yaml.safe_load(config_path.read_text())
    config["drift"] = {"window": 10, "false_alert_rate": 0.001}
    config_path.write_text(yaml.safe_dump(config))
    profile_file = line_site / "state" / "profiles" / profile / "profile.yaml"
    stored = yaml.safe_load(profile_file.read_text())
    dark = [20.0 + i / 10 for i in range(30)]  # every statistic far below these images'
    stored["calibration"]["good_image_stats"] = {
        name: dark for name in ("luminance_p10", "luminance_p50", "luminance_p90")
    }
    stored["calibration"]["threshold"] = 1e9  # nothing flagged: the binomial test stays quiet
    profile_file.write_text(yaml.safe_dump(stored, sort_keys=False))
    database = line_site / "state" / "results.sqlite3"
    with watching(line_site, config_path) as (process, log):
        for i in range(10):
            shutil.copyfile(line_site / "queries" / "good.png",
                            line_site / "camera" / f"part-{i}.png")  # fmt: skip
        drifted = lambda: any(e.get("event") == "drift" for e in events(log))  # noqa: E731
        wait_for(drifted, 120, log, process)
    (event,) = [e for e in events(log) if e.get("event") == "drift"]
    assert event["test"] == "image" and "brighter" in event["reason"]
    with sqlite3.connect(database) as conn:
        assert conn.execute("SELECT kind FROM drift_events").fetchall() == [("image",)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_page_serves_without_torch(line_site):
    write_config(line_site)
    database = line_site / "state" / "results.sqlite3"
    created = run_cli(line_site, "db", "upgrade", "--db", str(database))
    assert created.returncode == 0, created.stderr
    port = free_port()
    report, log = line_site / "serve-report.json", line_site / "serve.log"
    with open(log, "wb") as handle:
        process = subprocess.Popen(
            command("serve", "--config", str(line_site / "daemon.yaml"), "--port", str(port)),
            cwd=REPO,
            env=line_env(line_site, report),
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline, status = time.monotonic() + 60, None
        while time.monotonic() < deadline and status is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
                    status = r.status
            except OSError:
                if process.poll() is not None:
                    raise AssertionError(log.read_text()[-4000:]) from None
                time.sleep(0.3)
        assert status is not None and status < 500, log.read_text()[-4000:]
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert json.loads(report.read_text())["loaded"] == []


def test_a_changed_graph_is_refused_in_one_sentence(line_site):
    config = write_config(line_site)
    with (line_site / "state/profiles/bolt/exported/query.onnx").open("ab") as graph:
        graph.write(b"\0")
    done = run_cli(line_site, "watch", "--config", str(config))
    assert done.returncode != 0
    assert "differs from the sha256 its profile records" in done.stderr
    assert "profile export bolt" in done.stderr


def test_a_changed_ir_file_is_refused_in_one_sentence(line_site):
    with (line_site / "state/profiles/bolt-ov/exported/query.bin").open("ab") as weights:
        weights.write(b"\0")
    done = run_cli(line_site, "profile", "test", "bolt-ov", str(line_site / "queries/good.png"))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "differs from the sha256 its profile records" in lines[0]
    assert "profile export bolt-ov --runtime openvino" in lines[0]


def test_a_torch_command_on_the_line_install_says_what_to_install(line_site):
    done = run_cli(
        line_site,
        "profile",
        "create",
        "other",
        "--model",
        str(line_site / "model.safetensors"),
        "--references",
        str(line_site / "references"),
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'padformer-edge[torch]'" in lines[0]


@pytest.mark.parametrize("runtime", sorted(PROFILES))
def test_profile_test_scores_images_without_torch(line_site, runtime):
    """``profile test``: the daemon's verdicts for a few files, on the command line."""
    site = json.loads((line_site / "site.json").read_text())
    queries = sorted((line_site / "queries").iterdir())
    name = PROFILES[runtime]
    cache = line_site / f"state/profiles/{name}/reference_cache.safetensors"
    cache.unlink()  # encoded again through the reference graph, and written with numpy
    done = run_cli(
        line_site,
        "profile",
        "test",
        name,
        *map(str, queries),
        "--out",
        str(line_site / "heatmaps"),
        "--json",
        "--no-fail",
    )
    assert done.returncode == 0, done.stderr
    for verdict in json.loads(done.stdout):
        image = Path(verdict["path"]).name
        torch_score = site["torch_scores"][image]
        assert verdict["score"] == pytest.approx(torch_score, rel=SCORE_RTOL)
        assert verdict["anomalous"] == (torch_score > site["threshold"])
        assert Path(verdict["heatmap"]).is_file()
    assert cache.is_file()


@pytest.mark.parametrize("runtime", sorted(COMPARE_PROFILES))
def test_the_learned_comparison_scores_without_torch(line_site, runtime):
    """A profile on the ``compare`` metric runs the comparator's graphs on the line and
    scores as the torch comparator did, verdicts included."""
    site = json.loads((line_site / "site.json").read_text())
    queries = sorted((line_site / "queries").iterdir())
    name = COMPARE_PROFILES[runtime]
    done = run_cli(line_site, "profile", "test", name, *map(str, queries), "--json", "--no-fail")
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)
    assert len(verdicts) == len(queries)
    for verdict in verdicts:
        torch_score = site["compare_scores"][Path(verdict["path"]).name]
        assert verdict["score"] == pytest.approx(torch_score, rel=SCORE_RTOL)
        assert verdict["anomalous"] == (torch_score > site["compare_threshold"])


def test_camera_frames_score_without_torch(line_site):
    """A profile with a belt photo and a region to ignore finds the part in each JPEG frame,
    scores its crop on the exported graphs as torch does, verdicts included, and answers
    the belt alone with "no part"."""
    site = json.loads((line_site / "site.json").read_text())
    queries = sorted((line_site / "framed-queries").iterdir())
    done = run_cli(line_site, "profile", "test", FRAMED_PROFILE, *map(str, queries), "--json",
                   "--no-fail", "--out", str(line_site / "framed-heatmaps"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    verdicts = {Path(v["path"]).name: v for v in json.loads(done.stdout)}
    assert sorted(verdicts) == sorted(site["framed_scores"])
    for name, torch_score in site["framed_scores"].items():
        verdict = verdicts[name]
        if torch_score is None:
            assert verdict["no_part"] and verdict["score"] is None and not verdict["anomalous"]
            continue
        assert not verdict["no_part"]
        assert verdict["score"] == pytest.approx(torch_score, rel=SCORE_RTOL)
        assert verdict["anomalous"] == (torch_score > site["framed_threshold"])
    assert verdicts["dent.jpg"]["anomalous"] and not verdicts["good.jpg"]["anomalous"]


def test_doctor_checks_the_exported_files_and_no_checkpoint(line_site):
    """A line PC need not hold the checkpoint: doctor checks the graphs' sha256 instead."""
    config = write_config(line_site)
    (line_site / "model.safetensors").unlink()
    done = run_cli(line_site, "doctor", "--config", str(config))
    assert "exported files in" in done.stdout and "match" in done.stdout, done.stdout
    with (line_site / "state/profiles/bolt/exported/cells.onnx").open("ab") as graph:
        graph.write(b"\0")
    broken = run_cli(line_site, "doctor", "--config", str(config))
    assert broken.returncode != 0
    assert "differs from the sha256 its profile records" in broken.stdout + broken.stderr


def test_doctor_names_a_runtime_the_line_install_cannot_import(line_site):
    """A config that runs a profile on torch, checked by a process that cannot import
    torch: one problem naming the missing modules and the extra that brings them, where
    ``watch`` would start and then exit 2."""
    config = write_config(line_site)
    settings = yaml.safe_load(config.read_text())
    settings["worker"]["runtime"] = "torch"
    config.write_text(yaml.safe_dump(settings))
    done = run_cli(line_site, "doctor", "--config", str(config), "--json")
    assert done.returncode == 1, done.stderr
    problems = {f["subject"]: f["detail"] for f in json.loads(done.stdout) if not f["ok"]}
    assert set(problems) == {"profile 'bolt'"}
    assert "runs on torch, but this install cannot import torch" in problems["profile 'bolt'"]
    assert "pip install 'padformer-edge[torch]'" in problems["profile 'bolt'"]


def test_a_changed_reference_is_refused_without_torch(line_site):
    """The line runtime checks the references' sha256 too, before it scores anything."""
    reference = sorted((line_site / "state/profiles/bolt/references").iterdir())[0]
    query = line_site / "queries/good.png"
    reference.write_bytes(query.read_bytes())
    done = run_cli(line_site, "profile", "test", "bolt", str(query))
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"reference {reference} differs from the sha256" in lines[0]
    assert "profile create bolt --references DIR" in lines[0]
