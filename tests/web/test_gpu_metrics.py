"""``/metrics`` shows the GPU the worker detects on (memory torch holds, utilisation), and
no GPU family at all when the worker is on the CPU or no worker runs in the process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from prometheus_client.parser import text_string_to_metric_families

from padformer_edge.devices.gpu_gauges import follow_devices
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.web.metrics import Metrics

GPU_FAMILIES = {
    "padformer_gpu_memory_allocated_bytes",
    "padformer_gpu_memory_reserved_bytes",
    "padformer_gpu_utilization_ratio",
}


@pytest.fixture
def metrics(tmp_path: Path) -> Iterator[Metrics]:
    engine = open_engine(str(tmp_path / "line.sqlite3"))
    upgrade(engine)
    yield Metrics(lambda: engine, dict)
    follow_devices(None)
    engine.dispose()


def scrape(metrics: Metrics) -> dict[str, dict[str, float]]:
    """Each GPU family's samples, by device."""
    return {
        family.name: {s.labels["device"]: s.value for s in family.samples}
        for family in text_string_to_metric_families(metrics.render().decode())
        if family.name in GPU_FAMILIES
    }


def fake_cuda(monkeypatch: pytest.MonkeyPatch, utilization: object) -> None:
    """torch's CUDA readings as a busy card would give them, without a card."""
    held = {"cuda:0": (3 << 30, 5 << 30), "cuda:1": (1 << 20, 2 << 20)}
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d: held[str(d)][0])
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda d: held[str(d)][1])

    def busy(device: str) -> int:
        if isinstance(utilization, Exception):
            raise utilization
        return utilization[device]

    monkeypatch.setattr(torch.cuda, "utilization", busy)


def test_no_worker_or_a_worker_on_the_cpu_shows_no_gpu(metrics: Metrics) -> None:
    assert scrape(metrics) == {}
    follow_devices(lambda: [torch.device("cpu"), "cuda"])  # "cuda": onnxruntime's, not torch's
    assert scrape(metrics) == {}


def test_a_worker_on_cuda_shows_memory_and_utilisation_per_device(
    metrics: Metrics, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cuda(monkeypatch, {"cuda:0": 87, "cuda:1": 5})
    devices = [torch.device("cuda"), torch.device("cuda", 0), torch.device("cuda", 1)]
    follow_devices(lambda: devices)
    assert scrape(metrics) == {
        "padformer_gpu_memory_allocated_bytes": {"cuda:0": 3 << 30, "cuda:1": 1 << 20},
        "padformer_gpu_memory_reserved_bytes": {"cuda:0": 5 << 30, "cuda:1": 2 << 20},
        "padformer_gpu_utilization_ratio": {"cuda:0": 0.87, "cuda:1": 0.05},
    }


def test_without_nvml_memory_alone_and_a_lost_device_drops_out(
    metrics: Metrics, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_cuda(monkeypatch, ModuleNotFoundError("pynvml"))
    devices = [torch.device("cuda", 0), torch.device("cuda", 7)]  # 7: no such card any more
    follow_devices(lambda: devices)
    assert scrape(metrics) == {
        "padformer_gpu_memory_allocated_bytes": {"cuda:0": 3 << 30},
        "padformer_gpu_memory_reserved_bytes": {"cuda:0": 5 << 30},
    }
