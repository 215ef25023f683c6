"""Position-specific cross-attention without materialising one key set per position.

Query position j attends over a key set made of tokens every position shares (the
anomaly-agnostic tokens, or all references in the CroCo-style ablation) plus k tokens
chosen for j alone. Logits against the shared keys come from one matmul, logits against
the chosen keys from a gather and an einsum, and a single softmax runs over both, so
memory grows as M * (shared + k) rather than M * (shared + M * k).
"""

from __future__ import annotations

import torch
from torch import nn


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

    def forward(
        self,
        x: torch.Tensor,
        shared: torch.Tensor | None = None,
        pool: torch.Tensor | None = None,
        index: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """x [B, M, D] attends to ``shared`` [B or 1, S, D] and ``pool[b, index[b, j]]``.

        ``pool`` [B, T, D] holds the candidate tokens and ``index`` [B, M, k] the ones
        position j may see; either part may be absent, not both.
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
            k_sel, v_sel = (self._gather(proj(pool), index) for proj in (self.k, self.v))
            logits.append(torch.einsum("bhmd,bmkhd->bhmk", q, k_sel))  # [B, H, M, k]
        attn = torch.cat(logits, dim=-1).softmax(dim=-1)  # one softmax over both key sets
        out = torch.zeros_like(q)
        if shared is not None:
            out = out + attn[..., :shared_len] @ v_shared
        if index is not None:
            out = out + torch.einsum("bhmk,bmkhd->bhmd", attn[..., shared_len:], v_sel)
        return self.proj(out.transpose(1, 2).reshape(b, m, d))

    def _gather(self, pool: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """pool [B, T, D], index [B, M, k] -> [B, M, k, H, Dh]."""
        b, m, k = index.shape
        picked = torch.gather(pool, 1, index.reshape(b, m * k, 1).expand(-1, -1, pool.shape[-1]))
        return picked.view(b, m, k, self.num_heads, self.head_dim)
