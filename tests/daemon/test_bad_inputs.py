"""Every kind of bad camera file becomes a failed row with its reason; the daemon lives on."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tests.daemon.harness import (
    DaemonProcess,
    encoded,
    make_site,
    rows,
    settled,
    wait_for,
    write_image,
)
from tests.detect_images import product_image

EXPECTED_REASONS = {
    "corrupt.png": "corrupt image",
    "truncated.jpg": "truncated image",
    "empty.png": "zero-byte file",
    "huge.png": "larger than",
    "notes.txt": "not an image file",
    "link.png": "symbolic links",
    "escape": "symbolic links",  # a folder link leading out of the camera folder
}


def test_bad_files_fail_with_reasons_and_the_next_good_file_is_inspected(tmp_path: Path) -> None:
    site = make_site(tmp_path, intake={"max_file_mb": 0.02})  # about 20 kB
    camera = site.cameras["cam0"]
    outside = write_image(tmp_path / "outside" / "elsewhere.png", product_image(48, 64, 3))
    noise = np.random.default_rng(0).integers(0, 256, (160, 160, 3), dtype=np.uint8)
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        png = encoded(product_image(48, 64, 1))
        (camera / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + os.urandom(300) + png[-12:])
        jpeg = encoded(product_image(48, 64, 2), ".jpg")
        (camera / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
        (camera / "empty.png").write_bytes(b"")
        write_image(camera / "huge.png", noise)
        (camera / "notes.txt").write_text("shift notes, not a picture\n")
        (camera / "link.png").symlink_to(outside)
        (camera / "escape").symlink_to(outside.parent, target_is_directory=True)
        wait_for(settled(site.database, len(EXPECTED_REASONS)), 60, daemon, "bad files recorded")
        good = write_image(camera / "good.png", product_image(48, 64, 4))
        wait_for(settled(site.database, len(EXPECTED_REASONS) + 1), 60, daemon, "good file")
        assert daemon.alive()
        assert daemon.terminate() == 0
    by_name = {Path(r["source_path"]).name: r for r in rows(site.database)}
    assert set(by_name) == {*EXPECTED_REASONS, good.name}  # nothing read through the link
    for name, reason in EXPECTED_REASONS.items():
        assert by_name[name]["status"] == "failed", name
        assert reason in by_name[name]["error"], (name, by_name[name]["error"])
        assert by_name[name]["heatmap_path"] is None
    assert by_name[good.name]["status"] == "done"
