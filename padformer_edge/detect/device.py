"""Where detection runs and in which precision.

Reduced precision is offered only on CUDA: there bf16/fp16 autocast roughly halves the
decoder's cost on tensor cores. On a CPU, bf16 pays off only with AVX512-BF16 or AMX
(1.46x on the development machine's EPYC), and it moves the anomaly maps (the variance
filter flips pixels near its median) in ways a float32 calibration does not expect, so
CPUs run float32. Scoring
always runs in float32 because squared LAB differences of nearby colours lose their
digits in 16-bit floats.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from padformer_edge.detect.settings import DEVICES, PRECISIONS
from padformer_edge.errors import UserError

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(name: str) -> torch.device:
    """``auto`` picks the first CUDA GPU when one is visible, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise UserError(
                "device 'cuda' was requested but no CUDA GPU is visible; use "
                "--device cpu or check the GPU driver."
            )
        return torch.device("cuda")
    raise UserError(f"device '{name}' is unknown; choose one of {', '.join(DEVICES)}.")


def check_precision(precision: str, device: torch.device) -> None:
    """Reject precisions that are unknown or that need a GPU on a CPU-only run."""
    if precision not in PRECISIONS:
        raise UserError(
            f"precision '{precision}' is unknown; choose one of {', '.join(PRECISIONS)}."
        )
    if precision != "fp32" and device.type != "cuda":
        raise UserError(f"precision '{precision}' needs a CUDA device; use fp32 on the CPU.")


@contextlib.contextmanager
def model_precision(precision: str, device: torch.device) -> Iterator[None]:
    """Autocast for the model's forward pass when reduced precision was asked for."""
    if precision == "fp32":
        yield
        return
    with torch.autocast(device_type=device.type, dtype=AUTOCAST_DTYPES[precision]):
        yield


def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work so wall-clock timings mean what they say."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
