"""The worker on a GPU: batches that grow while a burst drains, and the move to the CPU
when the GPU fails (the failure is simulated; the queue, files and alerts are real)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sqlalchemy import select

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.burst import next_batch_size
from padformer_edge.daemon.inspectors import Inspector
from padformer_edge.daemon.intake import Camera
from padformer_edge.daemon.settings import WorkerConfig
from padformer_edge.daemon.worker import Worker, device_lost
from padformer_edge.detect.detection import Detection
from padformer_edge.store.models import Alert, Inspection, Status
from tests.daemon.harness import queued_images

IMAGES = 6


class _Scores:
    """A detector scoring every image by its mean pixel (the worker's view of one)."""

    device = torch.device("cpu")

    def __init__(self) -> None:
        self.max_batch, self.calls = 8, 0

    def detect(self, images: list[np.ndarray]) -> list[Detection]:
        self.calls += 1
        return [
            Detection(
                float(i.mean()) / 255, np.zeros(i.shape[:2], np.float32), [], [], {"total": 0.0}
            )
            for i in images
        ]


class _LostGpu(_Scores):
    """A detector whose GPU is lost at its first call (what cannot run here)."""

    device = torch.device("cuda")

    def detect(self, images: list[np.ndarray]) -> list[Detection]:
        self.calls += 1
        raise RuntimeError("CUDA error: unspecified launch failure (simulated)")


def test_a_lost_gpu_is_told_apart_from_other_errors() -> None:
    assert device_lost(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not device_lost(RuntimeError("shape mismatch"))
    assert not device_lost(ValueError("CUDA in a message of another kind"))
    assert not device_lost(torch.OutOfMemoryError("CUDA out of memory"))  # halving's job
    accelerator = getattr(torch, "AcceleratorError", None)
    if accelerator is not None:
        assert device_lost(accelerator("device lost"))


def test_a_failed_gpu_moves_the_profile_to_the_cpu_losing_no_row(tmp_path: Path) -> None:
    engine, folder = queued_images(tmp_path, IMAGES)
    gpu, cpu = _LostGpu(), _Scores()
    built: list[str] = []

    def on_cpu(profile: str) -> Inspector:
        built.append(profile)
        return Inspector(profile, cpu, 0.99, "0" * 64)  # type: ignore[arg-type]

    worker = Worker(
        engine, {"c": Camera("c", folder, "p")},
        {"c": Inspector("p", gpu, 0.99, "0" * 64)},  # type: ignore[arg-type]
        WorkerConfig(max_batch=4), tmp_path / "heat", 1 << 20, AlertsConfig(), on_cpu=on_cpu,
    )  # fmt: skip
    assert worker.run_batch() == 4 and worker.run_batch() == 2
    assert gpu.calls == 1 and cpu.calls == 2 and built == ["p"]
    assert worker.inspectors["c"].detector is cpu  # later batches stay on the CPU
    with engine.connect() as conn:
        rows = conn.execute(select(Inspection.status, Inspection.score)).all()
        alerts = conn.execute(select(Alert.inspection_id, Alert.payload)).all()
    engine.dispose()
    assert len(rows) == IMAGES and all(status is Status.done for status, _ in rows)
    assert all(score is not None for _, score in rows)
    (alert,) = [a for a in alerts if json.loads(a.payload)["kind"] == "device"]
    payload = json.loads(alert.payload)
    assert payload["profile"] == "p" and "now runs on the CPU" in payload["reason"]
    assert "unspecified launch failure" in payload["reason"]


def test_without_a_way_to_the_cpu_a_failed_gpu_fails_the_batch_for_a_retry(
    tmp_path: Path,
) -> None:
    worker = Worker(None, {}, {}, WorkerConfig(), tmp_path, 0, AlertsConfig())  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="CUDA error"):
        worker.detect_halving(Inspector("p", _LostGpu(), 1.0, "0" * 64), [np.zeros((2, 2, 3))])  # type: ignore[arg-type]


GROW = {"base": 4, "ceiling": 32, "latency_ms": 1000.0}


def test_a_long_queue_doubles_the_batch_up_to_the_ceiling() -> None:
    assert next_batch_size(4, backlog=500, last_batch_ms=None, **GROW) == 8
    assert next_batch_size(8, backlog=500, last_batch_ms=400.0, **GROW) == 16
    assert next_batch_size(32, backlog=500, last_batch_ms=100.0, **GROW) == 32
    assert next_batch_size(16, backlog=20, last_batch_ms=100.0, **GROW) == 16  # not 2x 16


def test_the_latency_bound_stops_and_reverses_growth() -> None:
    assert next_batch_size(16, backlog=500, last_batch_ms=600.0, **GROW) == 16  # 2x 600 > 1000
    assert next_batch_size(16, backlog=500, last_batch_ms=1200.0, **GROW) == 8
    assert next_batch_size(4, backlog=500, last_batch_ms=5000.0, **GROW) == 4  # never below


def test_a_short_queue_returns_to_max_batch_and_no_ceiling_means_no_growth() -> None:
    assert next_batch_size(32, backlog=7, last_batch_ms=10.0, **GROW) == 4
    assert (
        next_batch_size(4, base=4, ceiling=4, backlog=500, last_batch_ms=1.0, latency_ms=1e3) == 4
    )


def test_a_burst_ceiling_below_max_batch_is_refused() -> None:
    with pytest.raises(ValueError, match=r"burst_max_batch \(2\) is below worker\.max_batch"):
        WorkerConfig(max_batch=4, burst_max_batch=2)
    assert WorkerConfig(max_batch=4, burst_max_batch=4).burst_max_batch == 4
