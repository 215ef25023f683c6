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

    def __init__(self, dim: int, grid_size: int, channels: int = 0) -> None:
        super().__init__()
        # A 1x1 reduction first (``channels`` > 0) makes the 7x7 convolution, the largest
        # single cost of a training step, about dim/channels times cheaper.
        self.reduce = nn.Conv2d(dim, channels, 1) if channels else None
        self.dim = channels or dim
        self.localization = nn.Sequential(
            nn.Conv2d(2 * self.dim, 32, kernel_size=7, padding=3),
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
        maps = self._reduced(refs.flatten(0, -4))
        out = F.conv2d(maps, conv.weight[:, self.dim :], None, padding=conv.padding)
        # view, not unflatten: an exported graph keeps the leading sizes dynamic this way
        return out.view(*refs.shape[:-3], *out.shape[1:])

    def _reduced(self, maps: torch.Tensor) -> torch.Tensor:
        return maps if self.reduce is None else self.reduce(maps)

    def theta(
        self, query: torch.Tensor, refs: torch.Tensor, ref_term: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Affine maps [B, N, 2, 3] for query maps [B, C, h, w] and refs [B or 1, N, C, h, w].

        ``ref_term`` is ``reference_term(refs)`` when the caller has it already.
        """
        if ref_term is None:
            ref_term = self.reference_term(refs)
        conv = self.localization[0]
        query_term = F.conv2d(
            self._reduced(query), conv.weight[:, : self.dim], conv.bias, padding=conv.padding
        )
        first = query_term.unsqueeze(1) + ref_term  # [B, N, 32, h, w]: one query half, N refs
        hidden = self.localization[1:](first.flatten(0, 1))
        return self.fc(hidden.flatten(1)).view(*first.shape[:2], 2, 3)  # view: as above

    def forward(
        self, query: torch.Tensor, refs: torch.Tensor, ref_term: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Reference maps [B or 1, N, C, h, w] resampled into the frame of each of the B
        query maps (bilinear): [B, N, C, h, w]."""
        theta = self.theta(query, refs, ref_term)
        tokens = refs.flatten(-2).transpose(-1, -2)  # [B or 1, N, h * w, C]
        aligned = resample_tokens(tokens, sampling_weights(theta, refs.shape[-2:]))
        return aligned.transpose(-1, -2).unflatten(-1, refs.shape[-2:])


def sampling_weights(theta: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """[B, N, M, M] with M = h * w: row p holds the weights output position p takes from
    each input position under affine maps theta [B, N, 2, 3] (bilinear, zero padding).

    These are ``grid_sample``'s own weights, read off by resampling a one-hot basis (M
    channels) rather than the features: applying them is then one batched matmul over
    the token layout, which is cheaper than sampling every feature channel and needs
    neither an expanded copy of a shared reference set nor a transpose to channel maps.
    """
    if torch.onnx.is_in_onnx_export():
        return corner_weights(theta, size)
    h, w = size
    b, n = theta.shape[:2]
    basis = torch.eye(h * w, dtype=theta.dtype, device=theta.device).view(1, h * w, h, w)
    grid = F.affine_grid(theta.flatten(0, 1), [b * n, h * w, h, w], align_corners=False)
    picked = F.grid_sample(basis.expand(b * n, -1, -1, -1), grid, align_corners=False)
    return picked.flatten(2).transpose(1, 2).view(b, n, h * w, h * w)


def corner_weights(theta: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """``sampling_weights`` as an exported graph computes them, from the sampling points
    directly: bilinear weights are a product of one tent per axis, ``max(0, 1 - |x - j|)``
    for column j and the same for rows, which is zero for every cell but the (up to) four
    corners and leaves out corners outside the grid, as ``grid_sample``'s zero padding does.

    ``grid_sample`` over the one-hot basis spends M channels of interpolation to find four
    numbers per row, and onnxruntime's GridSample is slow per value; here the dense rows
    cost two small tents and one broadcast product. The weights equal ``grid_sample``'s to
    float32 rounding (``1 - (x - j)`` against its ``(j + 1) - x``).
    """
    h, w = size
    b, n = theta.shape[:2]
    grid = F.affine_grid(theta.flatten(0, 1), [b * n, 1, h, w], align_corners=False)
    points = grid.flatten(1, 2)  # [B * N, M, 2]: x, y in [-1, 1] per output position
    x = ((points[..., 0:1] + 1) * w - 1) / 2  # grid_sample's unnormalised source position
    y = ((points[..., 1:2] + 1) * h - 1) / 2
    columns = torch.arange(w, dtype=theta.dtype, device=theta.device)
    rows = torch.arange(h, dtype=theta.dtype, device=theta.device)
    across = (1 - (x - columns).abs()).clamp(min=0)  # [B * N, M, w]
    down = (1 - (y - rows).abs()).clamp(min=0)  # [B * N, M, h]
    dense = down.unsqueeze(-1) * across.unsqueeze(-2)  # [B * N, M, h, w]
    return dense.view(b, n, h * w, h * w)


def resample_tokens(tokens: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Tokens [B or 1, N, M, C] (any channels: each is resampled on its own) moved by
    ``sampling_weights`` [B, N, M, M] -> [B, N, M, C]."""
    if torch.onnx.is_in_onnx_export():
        # onnxruntime runs a broadcasting MatMul several times faster than this Einsum;
        # torch keeps the einsum, which spares it an expanded copy of the shared set
        return weights @ tokens
    if tokens.shape[0] == 1 < weights.shape[0]:  # one reference set for every query row
        return torch.einsum("bnpq,nqc->bnpc", weights, tokens[0])
    return weights @ tokens
