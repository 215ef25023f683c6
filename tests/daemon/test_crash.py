"""SIGKILL in the middle of a batch, files written while down, a restart: nothing lost,
nothing done twice."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from tests.daemon.harness import DaemonProcess, make_site, rows, settled, wait_for, write_image
from tests.detect_images import product_image

FILES = 24


def test_sigkill_mid_batch_then_restart_loses_and_repeats_nothing(tmp_path: Path) -> None:
    # 15 passes make each batch take long enough to be caught in the middle.
    site = make_site(tmp_path, passes=15)
    camera = site.cameras["cam0"]
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        written = [
            write_image(camera / f"{i:03d}.png", product_image(48, 64, i)) for i in range(FILES)
        ]

        def mid_batch() -> bool:
            states = Counter(r["status"] for r in rows(site.database))
            return states["processing"] > 0 and states["done"] > 0

        wait_for(mid_batch, 120, daemon, "a batch in progress after a first result")
        daemon.kill()
    interrupted = Counter(r["status"] for r in rows(site.database))
    assert interrupted["processing"] > 0 and interrupted["done"] < FILES
    while_down = [
        write_image(camera / "later" / f"{i}.jpg", product_image(48, 64, 100 + i)) for i in range(4)
    ]

    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        wait_for(settled(site.database, FILES + 4), 180, daemon, "all files after restart")
        assert daemon.terminate() == 0
    result = rows(site.database)
    assert sorted(r["source_path"] for r in result) == sorted(map(str, written + while_down))
    assert {r["status"] for r in result} == {"done"}
    assert max(r["attempts"] for r in result) == 2  # the interrupted batch ran again, once
    heatmaps = sorted(site.heatmaps.rglob("*.jpg"))
    # recorded relative to the state folder the heatmaps live in, so it can be moved
    assert heatmaps == sorted(site.root / "state" / r["heatmap_path"] for r in result)
    assert all(Path(r["heatmap_path"]).name == f"{r['id']}.jpg" for r in result)
