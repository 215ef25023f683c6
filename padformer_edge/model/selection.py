"""Dynamic patch selection: which aligned reference tokens each query position may use.

The score mixes appearance (cosine of features) with locality (how far apart the two
patches sit on the grid): S = (1 - w) cos + w exp(-dist / sigma). The locality term is
used only when the reference grid has as many patches as the query grid, because grid
positions are only comparable then.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def grid_distances(grid_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """[M, M] Euclidean distances between row-major patch positions (row, col)."""
    idx = torch.arange(grid_size * grid_size, device=device)
    pos = torch.stack([idx // grid_size, idx % grid_size], dim=1).float()
    return torch.cdist(pos, pos)


def hybrid_similarity(
    query: torch.Tensor, refs: torch.Tensor, weight: float, sigma: float
) -> torch.Tensor:
    """Scores [B, M, N * Mr] between query tokens [B, M, D] and reference tokens [B, N, Mr, D]."""
    m = query.shape[1]
    n, mr = refs.shape[1:3]
    keys = F.normalize(refs.flatten(1, 2), dim=-1).transpose(1, 2)
    local = mr == m
    side = round(int(m) ** 0.5)  # int(): a traced size is a tensor while exporting
    if local and torch.onnx.is_in_onnx_export():
        # the weights applied where they are cheap: (1 - w) to the [B, M, D] query rather
        # than to the [B, M, N * Mr] product, w to the one [M, M] locality table (a
        # constant of the graph); the same scores to float32 rounding, one pass less over
        # the largest tensor of the selection
        cosine = ((1.0 - weight) * F.normalize(query, dim=-1)) @ keys
        locality = weight * torch.exp(-grid_distances(side, query.device) / sigma)
        return cosine + locality.repeat(1, n)
    feat = F.normalize(query, dim=-1) @ keys
    if not local:
        return feat
    spatial = torch.exp(-grid_distances(side, query.device) / sigma).repeat(1, n)
    return (1.0 - weight) * feat + weight * spatial


def select_top_k(
    query: torch.Tensor, refs: torch.Tensor, k: int, weight: float, sigma: float
) -> torch.Tensor:
    """Indices [B, M, k] into the flattened N * Mr reference tokens, best first.

    Only the choice is discrete: gradients still reach the chosen (aligned) tokens, and
    through them the STN, because callers gather the tokens with these indices.
    """
    with torch.no_grad():
        scores = hybrid_similarity(query, refs, weight, sigma)
        k = min(k, scores.shape[-1])
        return scores.topk(k, dim=-1).indices
