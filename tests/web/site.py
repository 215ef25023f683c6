"""A small history on disk for the web tests: real PNGs, a migrated database, real rows.

Rows are written through the daemon's own store functions (enqueue, claim, complete,
fail, mark_alert_*), so the page reads exactly what a daemon leaves behind. Besides
ordinary results it records the hostile cases the security tests need: a path outside
every root, a ``../`` path that climbs out, a symbolic link pointing out, a relative
path, an HTML file, and names carrying markup.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cv2
import numpy as np
from sqlalchemy import Engine

from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    due_alerts,
    enqueue,
    fail,
    mark_alert_failed,
    mark_alert_sent,
)

THRESHOLD = 1.0
PROFILE_VERSION = 4  # every result is stored as scored by this profile version
HOSTILE_NAME = "<img src=x onerror=alert(1)>.png"
HOSTILE_CAMERA = "<script>alert('cam')</script>"


def png(path: Path, seed: int, size: tuple[int, int] = (48, 64)) -> Path:
    """A real PNG written by OpenCV: a gradient plus a seeded square."""
    height, width = size
    image = np.zeros((height, width, 3), np.uint8)
    image[..., 0] = np.linspace(40, 220, width, dtype=np.uint8)[None, :]
    image[..., 1] = (seed * 37) % 255
    y, x = (seed * 7) % (height - 10), (seed * 11) % (width - 10)
    image[y : y + 10, x : x + 10] = 255
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), image)
    return path


@dataclass
class Site:
    """Folders, the database URL and the ids of rows the tests look at."""

    root: Path
    db: str
    cameras: Path
    heatmaps: Path
    outside: Path
    good: list[int] = field(default_factory=list)
    anomalies: list[int] = field(default_factory=list)
    failed: int = 0
    hostile: dict[str, int] = field(default_factory=dict)
    dead_alert: int = 0
    sent_alert: int = 0

    @property
    def roots(self) -> list[Path]:
        return [self.cameras, self.heatmaps]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _queue(engine: Engine, camera: str, product: str, path: str, when: datetime) -> int:
    row = enqueue(engine, camera=camera, product=product, source_path=path,
                  sha256=_digest(path), size_bytes=100, discovered_at=when)  # fmt: skip
    return row.id


def _finish(engine: Engine, site: Site, row_id: int, score: float, alert: bool) -> None:
    (claimed,) = claim_batch(engine, 1)
    assert claimed.id == row_id
    complete_claimed(engine, site, row_id, score, alert)


def complete_claimed(engine: Engine, site: Site, row_id: int, score: float, alert: bool) -> None:
    """Store the result of the claimed row ``row_id`` with its heatmap."""
    heatmap = png(site.heatmaps / f"{row_id}.png", seed=row_id + 100)
    outcome = DetectionOutcome(
        score=score,
        threshold=THRESHOLD,
        heatmap_path=str(heatmap),
        model_sha256="0" * 64,
        detect_ms=40.0 + row_id,
        alerts=[AlertRequest("hook", {"id": row_id})] if alert else [],
        profile_version=PROFILE_VERSION,
    )
    complete(engine, row_id, outcome)


def build_site(engine: Engine, db: str, root: Path) -> Site:
    """Ten results on two cameras (three anomalous), one failure, the hostile rows."""
    site = Site(root, db, root / "cameras", root / "heatmaps", root / "outside")
    now = datetime.now(UTC)
    for i in range(10):
        camera, product = ("cam-a", "bolt") if i % 2 == 0 else ("cam-b", "nut")
        image = png(site.cameras / camera / f"img{i}.png", seed=i)
        row_id = _queue(engine, camera, product, str(image), now - timedelta(minutes=50 - i))
        anomalous = i in (3, 6, 9)
        _finish(engine, site, row_id, score=1.5 + i / 10 if anomalous else 0.2 + i / 100,
                alert=anomalous)  # fmt: skip
        (site.anomalies if anomalous else site.good).append(row_id)
    alerts = due_alerts(engine, limit=10)
    site.dead_alert, site.sent_alert = alerts[0].id, alerts[1].id
    mark_alert_failed(engine, site.dead_alert, "hook answered 500", max_attempts=1)
    mark_alert_sent(engine, site.sent_alert)

    broken = png(site.cameras / "cam-a" / "broken.png", seed=99)
    site.failed = _queue(engine, "cam-a", "bolt", str(broken), now - timedelta(minutes=30))
    claim_batch(engine, 1)
    fail(engine, site.failed, "image is truncated (no PNG trailer)", max_attempts=1)

    secret = png(site.outside / "secret.png", seed=7)
    (site.cameras / "cam-a" / "page.html").write_text("<script>alert(1)</script>")
    os.symlink(secret, site.cameras / "cam-a" / "link.png")
    hostile_paths = {
        "outside": str(secret),
        "dotdot": str(site.cameras / "cam-a" / ".." / ".." / "outside" / "secret.png"),
        "symlink": str(site.cameras / "cam-a" / "link.png"),
        "relative": "cameras/cam-a/img0.png",
        "html": str(site.cameras / "cam-a" / "page.html"),
        "markup": str(png(site.cameras / "cam-a" / HOSTILE_NAME, seed=5)),
    }
    for n, (name, path) in enumerate(hostile_paths.items()):
        camera = HOSTILE_CAMERA if name == "markup" else "cam-a"
        site.hostile[name] = _queue(engine, camera, "bolt", path, now - timedelta(minutes=20 - n))
    return site
