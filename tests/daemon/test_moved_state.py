"""A daemon whose camera folder lives in its state folder, moved with it to another
place: the rows name the files relative to the state folder, so after the move the
restarted daemon's scan knows every file it inspected (nothing inspected twice), reads
a new one, and every heatmap is where its row says."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

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


def relative_site(site: Site) -> Site:
    """The site's config with only paths relative to the state folder, and a camera in it."""
    camera = site.root / "state" / "camera"
    camera.mkdir(parents=True)
    config = yaml.safe_load(site.config.read_text())
    config["database"] = "results.sqlite3"
    config["cameras"] = [{"name": "cam0", "path": "camera", "profile": "bolt"}]
    config["intake"]["rescan_interval_s"] = 1.0
    site.config.write_text(yaml.safe_dump(config))
    return Site(site.root, {"cam0": camera}, site.config, site.database, site.heatmaps)


def moved(site: Site, root: Path) -> Site:
    site.root.rename(root)
    state = root / "state"
    return Site(root, {"cam0": state / "camera"}, root / site.config.name,
                state / "results.sqlite3", state / "heatmaps")  # fmt: skip


def test_a_moved_state_folder_keeps_its_rows_and_inspects_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the profile is made for this state folder: its checkpoint in it, recorded relative
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "before" / "state"))
    site = relative_site(make_site(tmp_path / "before"))
    profile = yaml.safe_load((site.root / "state/profiles/bolt/profile.yaml").read_text())
    assert profile["model"]["path"] == "sources/bolt/model.safetensors"
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        for i in range(3):
            write_image(site.cameras["cam0"] / f"{i}.png", product_image(48, 64, i))
        wait_for(settled(site.database, 3), 120, daemon, "three rows done")
        assert daemon.terminate() == 0
    first = rows(site.database)
    assert sorted(r["source_path"] for r in first) == ["camera/0.png", "camera/1.png",
                                                        "camera/2.png"]  # fmt: skip
    assert all(r["heatmap_path"] == f"heatmaps/00000/{r['id']}.jpg" for r in first)

    site = moved(site, tmp_path / "after")
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        write_image(site.cameras["cam0"] / "3.png", product_image(48, 64, 3))
        wait_for(settled(site.database, 4), 120, daemon, "the new file done")
        # the rescan runs every second: give it two looks at the moved camera folder
        time.sleep(2.5)
        assert len(rows(site.database)) == 4
        assert daemon.terminate() == 0
    after = rows(site.database)
    assert [r["source_path"] for r in after] == [r["source_path"] for r in first] + ["camera/3.png"]
    assert {r["status"] for r in after} == {"done"}
    for row in after:
        assert (site.root / "state" / row["heatmap_path"]).is_file()
