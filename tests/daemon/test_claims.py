"""One daemon per line and camera folder, with real daemon processes on one database (a
SQLite file, and the test PostgreSQL when ``PADFORMER_EDGE_TEST_PG_URL`` names one): a
second daemon on a held line or folder refuses at once naming the holder; after the
holder is SIGKILLed a new one starts. Two line PCs on one plant database (a PostgreSQL
server the test owns) meet in the plant, where another PC's claim holds until it
expires (``tests/store/test_claims.py`` holds the expiry rule itself on every backend)."""

from __future__ import annotations

import os
import socket
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import torch
import yaml
from sqlalchemy import delete, insert, select

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.create import create_profile
from padformer_edge.store.claims import line_resource
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.tables import daemon_claims
from tests.cli_process import run_cli_modules
from tests.daemon.harness import DaemonProcess, Site, make_site, settled, wait_for, write_image
from tests.daemon.held_import import held_marker, launcher
from tests.daemon.plant_chaos import backlog, local, plant
from tests.detect_images import product_image
from tests.pg_cluster import own_cluster
from tests.store.conftest import db_url  # noqa: F401  (the sqlite/postgresql parameter)

REFUSED_WITHIN_S = 2.0
"""Issue 52's target for a second daemon on a held line or camera, held against the
refusing process's own CPU time (user + system, from ``wait4``): the refusal waits on
nothing, so that is its time on a machine of its own, while the wall clock on a shared
test machine measures the other processes too (it is printed beside it)."""
USER_ERROR_EXIT = 2  # what the CLI exits with after a one-sentence UserError


def with_config(site: Site, name: str, **changes: object) -> Site:
    """The same site under another daemon config: ``changes`` replace top-level keys."""
    config = {**yaml.safe_load(site.config.read_text()), **changes}
    path = site.root / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return Site(site.root, site.cameras, path, site.database, site.heatmaps)


def refused(site: Site) -> tuple[str, float]:
    """Start a daemon that must refuse: its output and the CPU seconds it took."""
    started = time.monotonic()
    daemon = DaemonProcess(site)
    _, status, usage = os.wait4(daemon.process.pid, 0)
    daemon.process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    cpu_s = usage.ru_utime + usage.ru_stime
    print(f"refused in {cpu_s:.2f} s of CPU, {time.monotonic() - started:.2f} s of wall clock")
    output = daemon.log.read_text()
    assert daemon.process.returncode == USER_ERROR_EXIT, output[-3000:]
    return output, cpu_s


def test_a_held_line_or_folder_is_refused_until_its_holder_is_gone(
    db_url: str,  # noqa: F811
    tmp_path: Path,
    line_profile: Path,
) -> None:
    site = make_site(tmp_path, cameras=("cam0", "cam1"), profile=line_profile)
    base = with_config(site, "base", database=db_url)
    first = with_config(base, "first", line="press-1")
    host = socket.gethostname()
    with DaemonProcess(first) as holder:
        holder.wait_ready()
        pid = holder.process.pid

        output, elapsed = refused(with_config(base, "again", line="press-1"))
        assert f"line 'press-1' is held by the daemon of line 'press-1' on host {host} " \
               f"(PID {pid}, since " in output  # fmt: skip
        assert elapsed < REFUSED_WITHIN_S, f"refused after {elapsed:.1f} s"

        # Another line on one of the same camera folders: refused on the folder.
        other = with_config(base, "other", line="press-2",
                            cameras=[{"name": "c", "path": str(base.cameras["cam1"]),
                                      "profile": "bolt"}])  # fmt: skip
        output, elapsed = refused(other)
        folder = base.cameras["cam1"].resolve()
        assert f"camera folder {host}:{folder} is held by the daemon of line 'press-1'" in output
        assert f"(PID {pid}, since " in output
        assert elapsed < REFUSED_WITHIN_S, f"refused after {elapsed:.1f} s"
        assert holder.alive()  # the refusals touched nothing of the running daemon

        holder.kill()  # SIGKILL: no clean stop, its claims stay in the database
    assert _claim_pids(db_url) == {pid}

    # The holder's process is gone from this host: its claims are dead at once.
    with DaemonProcess(with_config(base, "after", line="press-1")) as successor:
        successor.wait_ready()
        assert _claim_pids(db_url) == {successor.process.pid}
        assert successor.terminate() == 0
    assert _claim_pids(db_url) == set()  # a clean stop lets go


def test_one_line_across_pcs_sharing_a_plant(tmp_path: Path, line_profile: Path) -> None:
    """Two line PCs configured with one line name and one plant database: two state
    folders, each with its own SQLite file and camera folder, so only the plant sees
    both. The daemon has no host-name override, so both run on this host under their
    own process ids; another PC's holder is a claim row written into the plant as
    ``far-pc``'s daemon writes it (its liveness is its age, as for any other host)."""
    with own_cluster() as cluster:
        first = with_config(make_site(tmp_path / "a", profile=line_profile), "a",
                            line="press-1", plant_database=cluster.url)  # fmt: skip
        second = with_config(make_site(tmp_path / "b", profile=line_profile), "b",
                             line="press-1", plant_database=cluster.url)  # fmt: skip
        host = socket.gethostname()
        with DaemonProcess(first) as holder:
            holder.wait_ready()
            output, elapsed = refused(second)
            assert f"line 'press-1' is held by the daemon of line 'press-1' on host {host} " \
                   f"(PID {holder.process.pid}, since " in output  # fmt: skip
            assert elapsed < REFUSED_WITHIN_S, f"refused after {elapsed:.1f} s"
            assert not second.database.exists()  # refused by the plant before anything local
            assert holder.terminate() == 0
        assert _claim_pids(cluster.url) == set()  # a clean stop lets go of the plant too

        # Another PC holds the line while the plant is away: the second starts on its
        # local claim, inspects, forwards nothing, and stops once the plant answers.
        since = datetime.now(UTC) - timedelta(hours=1)
        _foreign_plant_claim(cluster.url, renewed=datetime.now(UTC), since=since)
        cluster.stop()
        with DaemonProcess(second) as daemon:
            daemon.wait_ready()
            write_image(second.cameras["cam0"] / "0.png", product_image(48, 64, 0))
            wait_for(settled(second.database, 1), 120, daemon, "the image inspected")
            assert backlog(second) > 0
            cluster.start()
            assert daemon.wait(60) == USER_ERROR_EXIT
        output = daemon.log.read_text()
        assert (
            "error: line 'press-1' is held by the daemon of line 'press-1' on host "
            f"far-pc (PID 4242, since {since.isoformat(timespec='seconds')})" in output
        )
        assert any(e.get("event") == "daemon.plant_claim_refused" for e in daemon.events())
        assert plant(cluster, "SELECT * FROM inspections") == []  # nothing forwarded
        owed = backlog(second)
        assert owed > 0  # kept for when this PC holds the line

        # The other PC's claim expired: the line is this one's, its backlog goes over.
        _foreign_plant_claim(cluster.url, renewed=datetime.now(UTC) - timedelta(hours=2),
                             since=since)  # fmt: skip
        with DaemonProcess(second) as daemon:
            daemon.wait_ready()
            wait_for(lambda: backlog(second) == 0, 60, daemon, "the backlog forwarded")
            assert _claim_pids(cluster.url) == {daemon.process.pid}
            assert daemon.terminate() == 0
        query = "SELECT line, source_path, sha256 FROM inspections"
        assert plant(cluster, query) == local(second, query)
        assert [row[0] for row in plant(cluster, query)] == ["press-1"]


def _foreign_plant_claim(url: str, renewed: datetime, since: datetime) -> None:
    """The line claim ``far-pc``'s daemon of press-1 holds in the plant, renewed at
    ``renewed``; an hour's expiry, so only its age decides."""
    engine = open_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(delete(daemon_claims))
            conn.execute(insert(daemon_claims).values(
                resource=line_resource("press-1"), line="press-1", host="far-pc", pid=4242,
                started_at=since, renewed_at=renewed, ttl_s=3600.0,
            ))  # fmt: skip
    finally:
        engine.dispose()


def _logged(daemon: DaemonProcess, event: str) -> bool:
    return any(e.get("event") == event for e in daemon.events())


def _claim_pids(db: str) -> set[int]:
    engine = open_engine(db, read_only=True)
    try:
        with engine.connect() as conn:
            return set(conn.execute(select(daemon_claims.c.pid)).scalars())
    finally:
        engine.dispose()


assert os.name == "posix"  # SIGKILL and process ids as the daemon's claims use them


def test_an_uncalibrated_profile_is_refused_before_the_database_or_a_claim_exists(
    tmp_path: Path,
) -> None:
    """The claims need the database, so `watch` checks every profile (named, readable,
    calibrated) first: a refused start still leaves nothing behind, and loads no torch."""
    state = tmp_path / "state"
    torch.manual_seed(0)
    source = tmp_path / "sources" / "bolt"
    save_checkpoint(source / "model.safetensors", build_model("tiny"))
    for seed in range(2):
        write_image(source / f"references/{seed}.png", product_image(48, 64, seed))
    fast = DetectionSettings(metric="auto", device="cpu")
    create_profile(state / "profiles", "bolt", source / "model.safetensors",
                   source / "references", settings=fast)  # fmt: skip
    camera = tmp_path / "cam"
    camera.mkdir()
    database = state / "results.sqlite3"
    config = tmp_path / "daemon.yaml"
    config.write_text(yaml.safe_dump({
        "database": str(database), "line": "press-1",
        "cameras": [{"name": "cam0", "path": str(camera), "profile": "bolt"}],
    }))  # fmt: skip
    result, modules = run_cli_modules("watch", "--config", str(config), record=tmp_path / "m",
                                      env={"PADFORMER_EDGE_STATE_DIR": str(state)})  # fmt: skip
    assert result.returncode == USER_ERROR_EXIT, result.stderr
    assert "has no threshold yet" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "torch" not in modules
    assert not database.exists()


def test_a_refusal_while_watch_still_imports_is_its_sentence_and_exit_2(
    tmp_path: Path, line_profile: Path
) -> None:
    """The plant away at start: the daemon starts on its local claim and goes on to import
    what runs it (held there by the test, a phase that otherwise lasts a second or two),
    and meanwhile the plant answers with another PC's live claim. The refusal is the one
    sentence naming the holder and exit 2, not a signal's exit 143."""
    with own_cluster() as cluster:
        upgrade_engine = open_engine(cluster.url)
        upgrade(upgrade_engine)
        upgrade_engine.dispose()
        since = datetime.now(UTC) - timedelta(minutes=5)
        _foreign_plant_claim(cluster.url, renewed=datetime.now(UTC), since=since)
        site = with_config(make_site(tmp_path, profile=line_profile), "held", line="press-1",
                           plant_database=cluster.url, claim_expiry_s=3.0)  # fmt: skip
        cluster.stop()
        gate = tmp_path / "gate"
        held = launcher("padformer_edge.daemon.service", gate)
        with DaemonProcess(site, launcher=held) as daemon:
            wait_for(held_marker(gate).exists, 120, daemon, "watch holding its import")
            cluster.start()
            wait_for(lambda: _logged(daemon, "daemon.plant_claim_refused"), 60, daemon,
                     "the plant's refusal")  # fmt: skip
            gate.touch()
            code = daemon.wait(120)
        output = daemon.log.read_text()
        assert code == USER_ERROR_EXIT, output[-3000:]
        assert (
            "error: line 'press-1' is held by the daemon of line 'press-1' on host "
            f"far-pc (PID 4242, since {since.isoformat(timespec='seconds')})" in output
        )
        assert plant(cluster, "SELECT * FROM inspections") == []  # nothing forwarded
