"""Hostile camera files cost nothing but their own row (issue #15, items 1-7).

One daemon run meets all of them: some written while it was down (found by the start-up
scan, in directory order with a non-UTF-8 name among them), the rest written at once
with good images beside them so that they share a batch.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from tests.cli_process import run_cli_modules
from tests.daemon.harness import DaemonProcess, encoded, make_site, rows, settled, wait_for
from tests.detect_images import product_image
from tests.hostile_files import plant


def test_hostile_entries_get_their_own_reason_and_good_files_are_all_inspected(
    tmp_path: Path,
) -> None:
    site = make_site(tmp_path)
    camera = site.cameras["cam0"]
    outside = tmp_path / "outside.png"
    outside.write_bytes(encoded(product_image(48, 64, 9)))
    good = encoded(product_image(48, 64, 1))
    # Written while the daemon is down: the scan must get past every one of them.
    expected = plant(camera, "down", outside, good)
    down_good = [f"down_good{i}.png" for i in range(4)]
    for name in down_good:
        (camera / name).write_bytes(encoded(product_image(48, 64, len(name))))
    stale = site.heatmaps / "00000" / ".885.jpg.hz3yuw5m.tmp"  # a crash's leftover
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"half a heatmap")
    with DaemonProcess(site) as daemon:
        daemon.wait_ready(timeout=240)  # generous: the CI machine may be loaded
        assert not stale.exists()
        up = plant(camera, "up", outside, good)
        up_good = [f"up_good{i}.png" for i in range(3)]
        for name in up_good:
            (camera / name).write_bytes(encoded(product_image(48, 64, 20 + len(name))))
        expected |= up
        total = len(expected) + len(down_good) + len(up_good)
        wait_for(settled(site.database, total), 120, daemon, "every entry recorded")
        assert daemon.alive()
        assert daemon.terminate() == 0
        events = daemon.events()
    by_name = {Path(r["source_path"]).name: r for r in rows(site.database)}
    assert set(by_name) == {*expected, *down_good, *up_good}  # one row each, folders none
    for name in [*down_good, *up_good]:
        assert by_name[name]["status"] == "done", (name, by_name[name]["error"])
    for name, reason in expected.items():
        assert by_name[name]["status"] == "failed", name
        assert reason in by_name[name]["error"], (name, by_name[name]["error"])
        assert "interrupted" not in by_name[name]["error"]
        assert by_name[name]["attempts"] <= 1  # refused at once, never retried
    logged = [(e["event"], e.get("path", "")) for e in events if e.get("level") == "warning"]
    for tag in ("down", "up"):
        folder_lines = [p for ev, p in logged if ev == "intake.folder_not_inspected"]
        assert sum(p.endswith(f"{tag}_folder.png") for p in folder_lines) == 1
        refused = [p for ev, p in logged if ev == "intake.refused" and f"{tag}_bad_" in p]
        assert len(refused) == 1
    assert not any(ev == "intake.enqueue_failed" for ev, _ in logged)
    recovered = next(e for e in events if e["event"] == "daemon.recovered")
    assert recovered["stale_temporaries"] == 1


def test_an_unknown_profile_is_reported_before_the_database_exists(tmp_path: Path) -> None:
    camera = tmp_path / "cam"
    camera.mkdir()
    database = tmp_path / "state" / "results.sqlite3"
    config = tmp_path / "daemon.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "database": str(database),
                "cameras": [{"name": "cam0", "path": str(camera), "profile": "nope"}],
            }
        )
    )
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")}
    result, modules = run_cli_modules(
        "watch", "--config", str(config), env=env, record=tmp_path / "modules"
    )
    assert "torch" not in modules  # checked before the model stack loads
    assert result.returncode == 2, result.stderr
    assert "profile 'nope' does not exist" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert not database.exists() and not os.path.exists(str(database) + "-wal")
