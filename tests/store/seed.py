"""A small, fully known history written through the daemon's own service functions.

Twenty finished inspections one hour apart on 2026-03-01 (scores 1..20, threshold 15.5,
so the last five are anomalies with an alert each and a real PNG heatmap), plus five
recent rows on another camera: two failed, one skipped, two still pending.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
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
    enqueue,
    fail,
    skip,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)
THRESHOLD = 15.5


@dataclass(frozen=True)
class Seeded:
    done_ids: list[int]
    anomaly_ids: list[int]
    heatmaps: dict[int, Path]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def nearest_rank(values: list[float], percent: int) -> float:
    ordered = sorted(values)
    return ordered[max(1, math.ceil(percent / 100 * len(ordered))) - 1]


def write_heatmap(folder: Path, row_id: int) -> Path:
    """A real heatmap-like PNG, written by OpenCV as the detector will."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{row_id}.png"
    ramp = np.tile(np.linspace(0, 255, 32, dtype=np.uint8), (32, 1))
    assert cv2.imwrite(str(path), cv2.applyColorMap(ramp, cv2.COLORMAP_JET))
    return path


def seed_history(engine: Engine, heatmap_dir: Path) -> Seeded:
    done_ids, anomaly_ids, heatmaps = [], [], {}
    for i in range(20):
        row = enqueue(
            engine,
            camera="cam-a" if i % 2 == 0 else "cam-b",
            product="bolt" if i < 12 else "nut",
            source_path=f"/cams/{i}.png",
            sha256=digest(f"img{i}"),
            size_bytes=1000 + i,
            discovered_at=T0 + timedelta(hours=i),
        )
        (claimed,) = claim_batch(engine, 1)
        assert claimed.id == row.id
        score = float(i + 1)
        heatmaps[row.id] = write_heatmap(heatmap_dir, row.id)
        alerts = [AlertRequest("mqtt", {"id": row.id, "score": score})] if score > THRESHOLD else []
        complete(
            engine,
            row.id,
            DetectionOutcome(
                score=score,
                threshold=THRESHOLD,
                heatmap_path=str(heatmaps[row.id]),
                model_sha256=digest("model"),
                detect_ms=100.0 + i,
                alerts=alerts,
            ),
        )
        done_ids.append(row.id)
        if alerts:
            anomaly_ids.append(row.id)
    recent = datetime.now(UTC) - timedelta(minutes=30)
    rows = [
        enqueue(
            engine,
            camera="cam-c",
            product="bolt",
            source_path=f"/cams/c{i}.png",
            sha256=digest(f"c{i}"),
            size_bytes=10,
            discovered_at=recent,
        )
        for i in range(5)
    ]
    for row in claim_batch(engine, 2):
        fail(engine, row.id, "image is truncated", max_attempts=1)
    skip(engine, rows[2].id, "no references for product bolt")
    return Seeded(done_ids, anomaly_ids, heatmaps)
