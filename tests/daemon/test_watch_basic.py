"""Files created while the daemon is down, and files arriving while it runs."""

from __future__ import annotations

from pathlib import Path

from tests.daemon.harness import DaemonProcess, make_site, rows, settled, wait_for, write_image
from tests.detect_images import product_image


def test_files_from_downtime_and_live_files_are_each_done_once(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    camera = site.cameras["cam0"]
    before = [
        write_image(camera / f"early-{i}.png", product_image(48, 64, 10 + i)) for i in range(3)
    ]
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        wait_for(settled(site.database, 3), 60, daemon, "files written while down")
        live = [
            write_image(camera / "sub" / f"live-{i}.jpg", product_image(48, 64, 20 + i))
            for i in range(3)
        ]
        wait_for(settled(site.database, 6), 60, daemon, "live files")
        assert daemon.terminate() == 0
    done = rows(site.database)
    assert sorted(r["source_path"] for r in done) == sorted(str(p) for p in before + live)
    assert all(r["status"] == "done" for r in done)
    for row in done:
        assert Path(row["heatmap_path"]).is_file()
        assert Path(row["heatmap_path"]).name == f"{row['id']}.png"
