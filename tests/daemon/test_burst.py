"""A burst across three cameras with the ways real cameras write files."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from tests.daemon.harness import (
    DaemonProcess,
    encoded,
    make_site,
    rows,
    settled,
    wait_for,
)
from tests.detect_images import product_image

PER_CAMERA = {"direct": 200, "renamed": 150, "slow": 150}


def _direct(folder: Path, payloads: list[bytes]) -> None:
    for index, data in enumerate(payloads):
        (folder / f"d{index:04d}.png").write_bytes(data)


def _renamed(folder: Path, payloads: list[bytes]) -> None:
    for index, data in enumerate(payloads):
        temporary = folder / f"r{index:04d}.png.part"
        temporary.write_bytes(data)
        os.rename(temporary, folder / f"r{index:04d}.png")


def _slow(folder: Path, payloads: list[bytes]) -> None:
    # Half the bytes, a pause longer than stable_ms, then the rest: only the trailer check
    # keeps these from being queued half-written.
    for index, data in enumerate(payloads):
        with open(folder / f"s{index:04d}.png", "wb") as handle:
            handle.write(data[: len(data) // 2])
            handle.flush()
            if index % 10 == 0:
                time.sleep(0.3)
            handle.write(data[len(data) // 2 :])


def test_burst_of_500_images_gives_one_done_row_and_one_heatmap_each(tmp_path: Path) -> None:
    site = make_site(tmp_path, cameras=tuple(PER_CAMERA))
    images = [encoded(product_image(48, 64, seed)) for seed in range(25)]
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        writers = [
            threading.Thread(
                target=writer,
                args=(site.cameras[name], [images[i % 25] for i in range(count)]),
            )
            for name, count, writer in zip(
                PER_CAMERA, PER_CAMERA.values(), (_direct, _renamed, _slow), strict=True
            )
        ]
        for thread in writers:
            thread.start()
        for thread in writers:
            thread.join()
        wait_for(settled(site.database, 500), 200, daemon, "500 rows done")
        assert daemon.terminate() == 0
    result = rows(site.database)
    assert len(result) == 500
    assert {r["status"] for r in result} == {"done"}
    paths = [r["source_path"] for r in result]
    assert len(set(paths)) == 500
    assert not [p for p in paths if p.endswith(".part")]
    for name, count in PER_CAMERA.items():
        assert sum(r["camera"] == name for r in result) == count
    heatmaps = sorted(site.heatmaps.rglob("*.jpg"))
    assert len(heatmaps) == 500
    # recorded relative to the state folder the heatmaps live in, so it can be moved
    assert all(r["heatmap_path"].startswith("heatmaps/") for r in result)
    assert sorted(site.root / "state" / r["heatmap_path"] for r in result) == heatmaps
