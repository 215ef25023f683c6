"""Spatial transformer that aligns each reference feature grid to the query grid.

The localisation net sees the query grid and one reference grid side by side (channel
concatenation) and predicts one affine map; only the reference grid is resampled, so
the query keeps defining the coordinate frame. Convolutions are padded and pooling
rounds up, so grids as small as 8x8 (or smaller) still leave a non-empty map.
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

    def theta(self, query: torch.Tensor, refs: torch.Tensor) -> torch.Tensor:
        """Affine maps [B, N, 2, 3] for query maps [B, C, h, w] and refs [B, N, C, h, w]."""
        b, n = refs.shape[:2]
        pairs = torch.cat([query.unsqueeze(1).expand_as(refs), refs], dim=2).flatten(0, 1)
        return self.fc(self.localization(pairs).flatten(1)).view(b, n, 2, 3)

    def forward(self, query: torch.Tensor, refs: torch.Tensor) -> torch.Tensor:
        """Reference maps [B, N, C, h, w] resampled into the query's frame (bilinear)."""
        theta = self.theta(query, refs).flatten(0, 1)
        flat = refs.flatten(0, 1)
        grid = F.affine_grid(theta, list(flat.shape), align_corners=False)
        aligned = F.grid_sample(flat, grid, mode="bilinear", align_corners=False)
        return aligned.view_as(refs)
