"""The GPU the worker detects on, as ``/metrics`` gauges: memory torch holds, utilisation.

The daemon's worker and the page's ``/metrics`` share a process under ``watch`` (with
``http:`` set), so the worker names the devices its detectors run on here and the page
reads them at scrape time. A process with no such worker (``serve`` on its own, or a
worker on the CPU) names none, and the gauges are absent rather than 0: Prometheus then
shows no GPU, which is the truth. Only torch detectors count: torch's allocator knows
their memory, while onnxruntime on CUDA allocates outside it. Nothing here imports torch;
it is read from ``sys.modules`` when a CUDA device is named, since only then was it loaded.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

_lock = threading.Lock()
_devices: Callable[[], Iterable[object]] | None = None


@dataclass(frozen=True)
class GpuReading:
    """One CUDA device at scrape time; ``utilization`` is None without NVML."""

    device: str
    allocated_bytes: int
    reserved_bytes: int
    utilization: float | None  # 0..1


def follow_devices(devices: Callable[[], Iterable[object]] | None) -> None:
    """Read the worker's devices from ``devices`` (the detectors' ``device`` attributes),
    or stop (None, when the worker stops)."""
    global _devices
    with _lock:
        _devices = devices


def cuda_devices(devices: Iterable[object]) -> list[str]:
    """The torch CUDA devices among ``devices``, as ``cuda:N``, each once; a plain string
    (an onnxruntime detector's "cuda") is not a torch device and does not count."""
    found = set()
    for device in devices:
        if getattr(device, "type", None) == "cuda":
            index = getattr(device, "index", None)
            found.add(f"cuda:{0 if index is None else index}")
    return sorted(found)


def read_gpus() -> list[GpuReading]:
    """A reading of every CUDA device the followed worker uses now; [] without one."""
    with _lock:
        source = _devices
    torch = sys.modules.get("torch")
    if source is None or torch is None:
        return []
    readings = []
    for name in cuda_devices(source()):
        try:
            allocated = int(torch.cuda.memory_allocated(name))
            reserved = int(torch.cuda.memory_reserved(name))
        except Exception:  # a lost device: the worker moves to the CPU, the gauges go
            continue
        try:
            utilization: float | None = float(torch.cuda.utilization(name)) / 100.0
        except Exception:  # no pynvml, or the driver would not say: memory only
            utilization = None
        readings.append(GpuReading(name, allocated, reserved, utilization))
    return readings
