"""Hot reload, for real: the daemon as a subprocess on a camera folder (the watchdog
observer, a SQLite history), a profile changed under it the way ``profile refresh``
changes one and with ``profile rollback``, and a broken version it must refuse.

Each result row must name the version that scored it, and carry that version's
threshold, while the daemon's PID never changes.
"""

from __future__ import annotations

import json
from pathlib import Path

from padformer_edge.files.digest import file_sha256
from padformer_edge.profiles.layout import PROFILE_FILE, write_yaml_atomic
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.schema import ReferenceEntry
from padformer_edge.profiles.versions import install, kept_versions
from tests.cli_process import run_cli
from tests.daemon.harness import (
    DaemonProcess,
    Site,
    make_site,
    rows,
    settled,
    wait_for,
    write_image,
)
from tests.detect_images import product_image

CHECK_S = 0.3
EVERYTHING_FLAGGED = -1.0  # version 2's threshold: every score is above it


def drop(site: Site, first: int, count: int) -> int:
    """``count`` new images into the camera folder; the number of rows expected after."""
    for seed in range(first, first + count):
        write_image(site.cameras["cam0"] / f"part-{seed}.png", product_image(48, 64, 100 + seed))
    return first + count


def reloaded_to(daemon: DaemonProcess, version: int):
    return lambda: any(
        e.get("event") == "daemon.profile_reloaded" and e.get("new_version") == version
        for e in daemon.events()
    )


def new_version_like_refresh(site: Site) -> None:
    """Version 2 installed as ``profile refresh`` installs one: a new reference file
    beside the old ones, then profile.yaml replaced (threshold changed), the replaced
    version kept under versions/1/."""
    profiles = site.root / "state" / "profiles"
    profile = load_profile(profiles, "bolt")
    extra = write_image(site.root / "grown" / "grown-7.png", product_image(48, 64, 7))
    grown = ReferenceEntry(file=extra.name, sha256=file_sha256(extra), source=extra.name)
    entries = [*profile.config.references, grown]
    assert profile.calibration is not None
    config = profile.config.model_copy(update={
        "version": 2,
        "references": entries,
        "calibration": profile.calibration.model_copy(update={"threshold": EVERYTHING_FLAGGED}),
    })  # fmt: skip
    install(profile, config, {extra.name: extra})


def test_versions_are_taken_up_without_a_restart(tmp_path: Path) -> None:
    site = make_site(tmp_path, profile_check_interval_s=CHECK_S)
    profiles = site.root / "state" / "profiles"
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        pid = daemon.process.pid

        # version 1 (threshold 1e9): nothing flagged
        total = drop(site, 0, 3)
        wait_for(settled(site.database, total), 60, daemon, "version 1 results")

        new_version_like_refresh(site)
        wait_for(reloaded_to(daemon, 2), 60, daemon, "version 2 taken up")
        total = drop(site, total, 3)
        wait_for(settled(site.database, total), 60, daemon, "version 2 results")

        # rollback through the CLI, as an engineer runs it: version 1 comes back as 3
        done = run_cli("profile", "rollback", "bolt", "--yes", "eng", "--to", "1",
                       "--config", str(site.config),
                       env={"PADFORMER_EDGE_STATE_DIR": str(site.root / "state")})  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert kept_versions(load_profile(profiles, "bolt")) == [1, 2]
        wait_for(reloaded_to(daemon, 3), 60, daemon, "version 3 taken up")
        total = drop(site, total, 3)
        wait_for(settled(site.database, total), 60, daemon, "version 3 results")

        found = rows(site.database)
        assert [r["status"] for r in found] == ["done"] * 9
        assert [r["profile_version"] for r in found] == [1] * 3 + [2] * 3 + [3] * 3
        assert [r["threshold"] for r in found] == [1e9] * 3 + [EVERYTHING_FLAGGED] * 3 + [1e9] * 3
        assert [bool(r["is_anomaly"]) for r in found] == [False] * 3 + [True] * 3 + [False] * 3
        swaps = [(e["old_version"], e["new_version"]) for e in daemon.events()
                 if e.get("event") == "daemon.profile_reloaded"]  # fmt: skip
        assert swaps == [(1, 2), (2, 3)]
        assert daemon.alive() and daemon.process.pid == pid
        assert daemon.terminate() == 0
    shown = run_cli("results", "show", str(found[4]["id"]), "--json", "--config", str(site.config),
                    env={"PADFORMER_EDGE_STATE_DIR": str(site.root / "state")})  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["profile_version"] == 2


def test_a_broken_version_keeps_the_old_one_scoring(tmp_path: Path) -> None:
    site = make_site(tmp_path, profile_check_interval_s=CHECK_S)
    folder = site.root / "state" / "profiles" / "bolt"
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        profile = load_profile(folder.parent, "bolt")
        missing = ReferenceEntry(file="never-copied.png", sha256="0" * 64)
        broken = profile.config.model_copy(
            update={"version": 2, "references": [*profile.config.references, missing]}
        )
        write_yaml_atomic(folder / PROFILE_FILE, broken.model_dump(mode="json"))

        def failures() -> list[dict]:
            return [e for e in daemon.events() if e.get("event") == "daemon.profile_reload_failed"]

        wait_for(lambda: bool(failures()), 60, daemon, "the refusal")
        total = drop(site, 0, 4)
        wait_for(settled(site.database, total), 60, daemon, "results while broken")
        assert [r["profile_version"] for r in rows(site.database)] == [1] * 4
        assert [r["status"] for r in rows(site.database)] == ["done"] * 4

        # the file is checked many times meanwhile, the error logged once
        (error,) = failures()
        assert error["level"] == "error" and error["profile"] == "bolt"
        assert error["running_version"] == 1
        assert "never-copied.png is missing" in error["error"]
        assert "keeps scoring with version 1" in error["fix"]

        # fixed (a whole profile.yaml again): taken up at once, by the same process
        fixed = profile.config.model_copy(update={"version": 3})
        write_yaml_atomic(folder / PROFILE_FILE, fixed.model_dump(mode="json"))
        wait_for(reloaded_to(daemon, 3), 60, daemon, "the fixed version")
        total = drop(site, total, 2)
        wait_for(settled(site.database, total), 60, daemon, "results after the fix")
        assert [r["profile_version"] for r in rows(site.database)] == [1] * 4 + [3] * 2
        assert len(failures()) == 1
        assert daemon.terminate() == 0
