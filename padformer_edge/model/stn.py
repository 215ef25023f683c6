"""Spatial transformer that aligns each reference feature grid to the query grid.

The localisation net sees the query grid and one reference grid side by side (channel
concatenation) and predicts one affine map; only the reference grid is resampled, so
the query keeps defining the coordinate frame. Convolutions are padded and pooling
rounds up, so grids as small as 8x8 (or smaller) still leave a non-empty map.

A convolution over a channel concatenation is the sum of one convolution per part, so
the first convolution runs as a query half (with the bias) plus a reference half. The
reference half does not depend on the query: detection computes it once per reference
set (``reference_term``) and every pass adds it to one query half, instead of convolving
the concatenation once per reference and pass. The weight is split when used, so the
parameters and their state-dict names are those of the single concatenated convolution.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class FeatureSTN(nn.Module):
    """conv7x7->32, pool, ReLU, conv5x5->10, pool, ReLU, FC->32, ReLU, FC->6 (identity init)."""

    def __init__(self, dim: int, grid_size: int) -> None:
        super().__init__()
        self.dim = dim
        self.localization = nn.Sequential(
            nn.Conv2d(2 * dim, 32, kernel_size=7, padding=3),
            nn.MaxPool2d(2, ceil_mode=True),
            nn.ReLU(inplace=True),
            nn.Conv2d(32, 10, kernel_size=5, padding=2),
            nn.MaxPool2d(2, ceil_mode=True),
            nn.ReLU(inplace=True),
        )
        pooled = math.ceil(math.ceil(grid_size / 2) / 2)
        self.fc = nn.Sequential(
            nn.Linear(10 * pooled * pooled, 32), nn.ReLU(inplace=True), nn.Linear(32, 6)
        )
        self.reset_identity()

    def reset_identity(self) -> None:
        """Start as the identity warp so early training is not scrambled by random affines."""
        nn.init.zeros_(self.fc[-1].weight)
        with torch.no_grad():
            self.fc[-1].bias.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 0.0]))

    def reference_term(self, refs: torch.Tensor) -> torch.Tensor:
        """[..., 32, h, w]: the first convolution's reference half for maps [..., C, h, w]."""
        conv = self.localization[0]
        out = F.conv2d(refs.flatten(0, -4), conv.weight[:, self.dim :], None, padding=conv.padding)
        return out.unflatten(0, refs.shape[:-3])

    def theta(
        self, query: torch.Tensor, refs: torch.Tensor, ref_term: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Affine maps [B, N, 2, 3] for query maps [B, C, h, w] and refs [B or 1, N, C, h, w].

        ``ref_term`` is ``reference_term(refs)`` when the caller has it already.
        """
        if ref_term is None:
            ref_term = self.reference_term(refs)
        conv = self.localization[0]
        query_term = F.conv2d(query, conv.weight[:, : self.dim], conv.bias, padding=conv.padding)
        first = query_term.unsqueeze(1) + ref_term  # [B, N, 32, h, w]: one query half, N refs
        hidden = self.localization[1:](first.flatten(0, 1))
        return self.fc(hidden.flatten(1)).unflatten(0, first.shape[:2]).unflatten(-1, (2, 3))

    def forward(
        self, query: torch.Tensor, refs: torch.Tensor, ref_term: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Reference maps [B or 1, N, C, h, w] resampled into the frame of each of the B
        query maps (bilinear): [B, N, C, h, w]."""
        return warp(refs, self.theta(query, refs, ref_term))


def warp(maps: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Maps [B or 1, N, C, h, w] resampled bilinearly by affine maps [B, N, 2, 3]; any
    channels may ride along, since each channel is resampled on its own."""
    flat = maps.expand(theta.shape[0], -1, -1, -1, -1).flatten(0, 1)
    grid = F.affine_grid(theta.flatten(0, 1), list(flat.shape), align_corners=False)
    aligned = F.grid_sample(flat, grid, mode="bilinear", align_corners=False)
    return aligned.view(*theta.shape[:2], *flat.shape[1:])
