"""Position-specific cross-attention without materialising one key set per position.

Query position j attends over a key set made of tokens every position shares (the
anomaly-agnostic tokens, or all references in the CroCo-style ablation) plus k tokens
chosen for j alone. Logits against the shared keys come from one matmul, logits against
the chosen keys from a gather and a broadcast product, and a single softmax runs over
both, so memory grows as M * (shared + k) rather than M * (shared + M * k).

The chosen keys and values come from a pool the caller has projected already
(``pool_key_values``): the decoder projects the reference tokens once per reference set
and resamples the projections with the STN, which is exact because a linear map commutes
with bilinear resampling as long as the bias is added afterwards.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

KeyValues = tuple[torch.Tensor, torch.Tensor]
"""Keys and values of the candidates as two tensors rather than one [..., 2D] pool."""


class PositionSpecificCrossAttention(nn.Module):
    """Multi-head attention from M query tokens to shared keys plus per-position keys."""

    def __init__(self, dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim**-0.5
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.proj = nn.Linear(dim, dim)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        """[..., L, D] -> [..., H, L, Dh]."""
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(-3, -2)

    def pool_key_values(self, tokens: torch.Tensor, bias: bool = True) -> torch.Tensor:
        """[..., 2D]: keys then values of tokens [..., D]; ``bias=False`` leaves the part
        that commutes with resampling (``add_pool_bias`` completes it)."""
        weight = torch.cat([self.k.weight, self.v.weight])
        return F.linear(tokens, weight, self.add_pool_bias(None) if bias else None)

    def add_pool_bias(
        self, key_values: torch.Tensor | KeyValues | None
    ) -> torch.Tensor | KeyValues:
        """The key and value biases added to unbiased ``pool_key_values`` (or alone); to
        each half of a (keys, values) pair, as an exported graph keeps them."""
        if isinstance(key_values, tuple):
            return key_values[0] + self.k.bias, key_values[1] + self.v.bias
        bias = torch.cat([self.k.bias, self.v.bias])
        return bias if key_values is None else key_values + bias

    def forward(
        self,
        x: torch.Tensor,
        shared: torch.Tensor | None = None,
        pool: torch.Tensor | KeyValues | None = None,
        index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x [B, M, D] attends to ``shared`` [B or 1, S, D] and ``pool[b, index[b, j]]``.

        ``pool`` [B, T, 2D] holds the candidates' keys and values (``pool_key_values``),
        or is the pair of them, [B, T, D] each, and ``index`` [B, M, k] the ones position
        j may see; either part may be absent, not both.
        """
        if shared is None and index is None:
            raise ValueError("cross-attention needs shared keys, selected keys, or both.")
        b, m, d = x.shape
        q = self._heads(self.q(x)) * self.scale  # [B, H, M, Dh]
        shared_len = 0 if shared is None else shared.shape[1]
        logits = []
        if shared is not None:
            k_shared, v_shared = self._heads(self.k(shared)), self._heads(self.v(shared))
            logits.append(q @ k_shared.transpose(-1, -2))  # [B, H, M, S]
        if index is not None:
            halves = pool if isinstance(pool, tuple) else pool.split(d, dim=-1)
            k_sel, v_sel = (self._gather(half, index) for half in halves)
            by_position = q.transpose(1, 2).unsqueeze(2)  # [B, M, 1, H, Dh]
            logits.append((by_position * k_sel).sum(-1).permute(0, 3, 1, 2))  # [B, H, M, k]
        attn = torch.cat(logits, dim=-1).softmax(dim=-1)  # one softmax over both key sets
        # No zeros_like start: an exported graph would hold those zeros as a constant of
        # the traced batch size (and 0 + x is x, so the sums are the same).
        out = None
        if shared is not None:
            out = attn[..., :shared_len] @ v_shared
        if index is not None:
            weights = attn[..., shared_len:].permute(0, 2, 3, 1).unsqueeze(-1)  # [B, M, k, H, 1]
            selected = (weights * v_sel).sum(2).transpose(1, 2)
            out = selected if out is None else out + selected
        return self.proj(out.transpose(1, 2).reshape(b, m, d))

    def _gather(self, pool: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """pool [B, T, D], index [B, M, k] -> [B, M, k, H, Dh], as whole-row copies."""
        b, t = pool.shape[:2]
        rows = (index + torch.arange(b, device=index.device).view(b, 1, 1) * t).flatten()
        picked = pool.reshape(b * t, -1).index_select(0, rows)
        return picked.view(*index.shape, self.num_heads, self.head_dim)
