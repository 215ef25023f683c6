"""Process-group set-up for runs started by ``torchrun`` (or as a single process).

``torchrun`` exports RANK, WORLD_SIZE and LOCAL_RANK; without them the run is a single
process. NCCL on GPUs, gloo on CPU, so the multi-process path is testable on a laptop.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist

# resolve_device is the package's one device rule
from padformer_edge.devices.runtimes import resolve_device


@dataclass(frozen=True)
class DistContext:
    """Where this process sits in the run and which device it trains on."""

    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        """Only rank 0 writes checkpoints, resume points and progress."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def init_distributed(device_name: str) -> DistContext:
    """Join the process group torchrun prepared, or run alone."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank, local_rank = int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name, local_rank)
    if world_size > 1 and not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return DistContext(rank, world_size, local_rank, device)


def shutdown_distributed() -> None:
    if dist.is_initialized():
        dist.destroy_process_group()


def gather_floats(ctx: DistContext, values: list[float]) -> list[list[float]]:
    """Every rank's ``values`` (same length everywhere), on every rank."""
    if not ctx.distributed:
        return [values]
    tensor = torch.tensor(values, dtype=torch.float64, device=ctx.device)
    out = [torch.empty_like(tensor) for _ in range(ctx.world_size)]
    dist.all_gather(out, tensor)
    return [t.tolist() for t in out]
