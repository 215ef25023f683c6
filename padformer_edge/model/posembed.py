"""Fixed 2D sine-cosine position embeddings.

Fixed (not learned) embeddings keep the encoder compatible with MAE pre-training, whose
checkpoints assume the same table, and cost no parameters on an edge device.
"""

from __future__ import annotations

import torch


def _sincos_1d(dim: int, positions: torch.Tensor) -> torch.Tensor:
    """[len(positions), dim]: half sines, half cosines over geometric frequencies."""
    omega = 1.0 / 10000 ** (torch.arange(dim // 2, dtype=torch.float64) / (dim / 2.0))
    angles = positions.double()[:, None] * omega[None, :]
    return torch.cat([angles.sin(), angles.cos()], dim=1)


def sincos_2d(dim: int, grid_size: int, cls_token: bool = True) -> torch.Tensor:
    """[1, (1 +) grid_size**2, dim] table, row-major patches; the CLS row (if any) is zero.

    The first half of the channels encodes the column, the second half the row: the
    layout MAE pre-trained its encoders with, so imported MAE weights see the positions
    they learned on. ``dim`` must be a multiple of 4.
    """
    if dim % 4:
        raise ValueError(f"sin-cos embedding needs a dim divisible by 4, not {dim}.")
    coords = torch.arange(grid_size)
    rows, cols = torch.meshgrid(coords, coords, indexing="ij")
    table = torch.cat(
        [_sincos_1d(dim // 2, cols.flatten()), _sincos_1d(dim // 2, rows.flatten())], dim=1
    )
    if cls_token:
        table = torch.cat([torch.zeros(1, dim, dtype=table.dtype), table], dim=0)
    return table.float().unsqueeze(0)
