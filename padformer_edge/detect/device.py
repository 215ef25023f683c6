"""Where detection runs and in which precision.

Reduced precision is offered only on CUDA: there bf16/fp16 autocast roughly halves the
decoder's cost on tensor cores. On a CPU, bf16 pays off only with AVX512-BF16 or AMX
(1.46x on the development machine's EPYC), and it moves the anomaly maps (the variance
filter flips pixels near its median) in ways a float32 calibration does not expect, so
CPUs run float32. Scoring
always runs in float32 because squared LAB differences of nearby colours lose their
digits in 16-bit floats.

Which device a name means is ``runtimes.resolve_device``'s rule, shared with training.
On CUDA, fp32 means fp32: torch's TF32 switches for cuDNN's convolutions (on by default)
and for the matrix products are set off when a CUDA device is chosen for detection,
unless the process chose TF32 (``detect.tf32``; the daemon's ``worker.allow_tf32``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

from padformer_edge.detect.settings import PRECISIONS
from padformer_edge.detect.tf32 import tf32_allowed
from padformer_edge.devices.runtimes import resolve_device
from padformer_edge.errors import UserError

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def detection_device(name: str) -> torch.device:
    """Where a detection runs: ``runtimes.resolve_device``'s choice, with the process's
    float32 mode applied to a CUDA device (``apply_float32``) before anything runs on it.
    Training takes the same choice without it: its precision is the recipe's."""
    device = resolve_device(name)
    apply_float32(device)
    return device


def apply_float32(device: torch.device | str) -> None:
    """Set torch's TF32 switches (cuDNN's convolutions, the matrix products) for work on
    ``device``: off, so float32 is float32 and CUDA stays within ``PARITY_RTOL`` of the
    CPU, unless the process chose TF32 (``tf32.allow_tf32``). Nothing changes for a CPU:
    the switches are process-wide and a CPU detector must not undo a GPU's choice."""
    if torch.device(device).type != "cuda":
        return
    allowed = tf32_allowed()
    torch.backends.cudnn.allow_tf32 = allowed
    torch.backends.cuda.matmul.allow_tf32 = allowed


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
