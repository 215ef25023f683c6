"""The shipped model on the demo's rendered part: detection speed over references, metrics,
precisions and images per call, each setting checked against the CPU's detection.

Used by ``benchmarks/gpu_detect_speed.py --model shipped``; split off because it is a grid
of its own with a parity check, while the preset table is one row per precision.

Precisions: ``fp32`` is what a profile runs (float32 throughout: the detector turns torch's
TF32 switches off, ``detect/device.py``), ``tf32`` is what the daemon's
``worker.allow_tf32`` runs (cuDNN's convolutions and the matrix products in TF32), ``bf16``
is the profile's bf16 autocast. Every ``fp32`` row must lie within ``PARITY_RTOL``:
``broken_fp32_rows`` names the rows that do not, and the script fails on them. The
parity check scores the same ``parity`` images on the CPU (float32) and on the device in
one call, and reports the largest gap in units of each CPU map's maximum
(``detect/parity.py``: within parity at most ``PARITY_RTOL``) and whether every verdict
agrees at a threshold set to the median CPU score (so about half the images lie on either
side of it and a flipped verdict near it would show).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

PRECISIONS = ("fp32", "tf32", "bf16")


@contextmanager
def float32_mode(precision: str, device: str) -> Iterator[None]:
    """TF32 for ``tf32`` only, chosen the daemon's way (``detect.tf32``, applied when the
    detector resolves its device); the process's choice and torch's switches as they were
    afterwards."""
    from padformer_edge.detect.device import apply_float32
    from padformer_edge.detect.tf32 import allow_tf32, tf32_allowed

    before = tf32_allowed()
    allow_tf32(precision == "tf32")
    try:
        yield
    finally:
        allow_tf32(before)
        apply_float32(device)


def broken_fp32_rows(rows: list[dict[str, Any]]) -> list[str]:
    """One line for each ``fp32`` row outside the parity bound: fp32 on CUDA must be the
    CPU's float32 within ``PARITY_RTOL``; only ``tf32`` and ``bf16`` may trade it away."""
    from padformer_edge.detect.parity import PARITY_RTOL

    return [
        f"fp32 row outside the parity bound: {r['references']} references, metric "
        f"{r['metric']}, {r['per_call']} images per call, gap {r['parity_gap']:.3g} > "
        f"PARITY_RTOL {PARITY_RTOL:g}"
        for r in rows
        if r["precision"] == "fp32" and not r["parity_gap"] <= PARITY_RTOL
    ]


def build(
    model: Any,
    references: list[np.ndarray],
    metric: str,
    precision: str,
    passes: int,
    device: str,
    model_batch: int,
) -> Any:
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.methods.registry import method_for

    settings = DetectionSettings(
        passes=passes,
        device=device,
        precision="bf16" if precision == "bf16" else "fp32",
        metric=metric,
        max_batch=model_batch,
    )
    return method_for(metric).torch_detector(references, settings, lambda: model)


def call_ms(detector: Any, images: list[np.ndarray], repeats: int, device: str) -> float:
    """Median wall milliseconds of one ``detect`` call on ``images`` (after one warm-up),
    with the GPU synchronised before the clock stops."""
    import torch

    def synchronize() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    detector.detect(images)
    times = []
    for _ in range(repeats):
        synchronize()
        start = time.perf_counter()
        detector.detect(images)  # numpy maps come back: the copy is inside the timing
        synchronize()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def parity(cpu: list[Any], found: list[Any]) -> dict[str, Any]:
    from padformer_edge.detect.parity import PARITY_RTOL, parity_gap, verdicts_agree

    threshold = float(np.median([d.score for d in cpu]))
    gap = parity_gap(cpu, found)
    return {
        "parity_gap": gap,
        "within_parity": gap <= PARITY_RTOL,
        "verdicts_agree": verdicts_agree(cpu, found, threshold),
    }


def measure_grid(
    model: Any,
    bank: list[np.ndarray],
    queries: list[np.ndarray],
    *,
    references: list[int],
    metrics: list[str],
    precisions: list[str],
    per_call: list[int],
    passes: int,
    repeats: int,
    parity_images: int,
    device: str,
    model_batch: int,
    progress: Any = print,
) -> list[dict[str, Any]]:
    """One row per (references, metric, precision, images per call); ``progress`` gets the
    rows so far after each (a caller with a time limit saves them as they come)."""
    import torch

    rows = []
    checked = queries[:parity_images]
    for count in references:
        refs = bank[:count]
        for metric in metrics:
            cpu_detector = build(model, refs, metric, "fp32", passes, "cpu", model_batch)
            cpu = cpu_detector.detect(checked)
            del cpu_detector
            for precision in precisions:
                with float32_mode(precision, device):
                    detector = build(model, refs, metric, precision, passes, device, model_batch)
                    agreement = parity(cpu, detector.detect(checked))
                    for n in per_call:
                        images = [queries[i % len(queries)] for i in range(n)]
                        ms = call_ms(detector, images, repeats, device)
                        row = {
                            "references": count,
                            "metric": metric,
                            "precision": precision,
                            "per_call": n,
                            "ms_per_image": ms / n,
                            "images_per_s": 1000 * n / ms,
                            **agreement,
                        }
                        if device == "cuda":
                            row["max_memory_bytes"] = int(torch.cuda.max_memory_allocated())
                        rows.append(row)
                        progress(rows)
                del detector
                if device == "cuda":
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
    return rows
