"""The cross-attention decoder: query tokens rebuilt from references and learned priors.

Each layer is post-norm (Alg. 1 of the supplement): self-attention over the query, then
alignment + selection of reference tokens, then position-specific cross-attention, then
an MLP. The anomaly-agnostic tokens (32 global, M local) are one memory bank shared by
all layers; local tokens carry the decoder position table so each keeps its location.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from timm.layers import Mlp
from timm.models.vision_transformer import Attention
from torch import nn

from padformer_edge.model.attention import PositionSpecificCrossAttention
from padformer_edge.model.config import ModelConfig
from padformer_edge.model.encoder import gather_tokens
from padformer_edge.model.posembed import sincos_2d
from padformer_edge.model.selection import select_top_k
from padformer_edge.model.stn import FeatureSTN, resample_tokens, sampling_weights


@dataclass(frozen=True)
class LayerReferenceTerms:
    """The parts of one decoder layer's work that depend on the reference tokens alone,
    so a reference cache pays for them once instead of once per query and pass."""

    stn: torch.Tensor | None
    """[B, N, 32, h, w] the reference half of the STN's first convolution (no STN: None)."""
    key_values: torch.Tensor | None
    """[B, N, M, 2D] unbiased cross-attention keys and values of the reference tokens,
    resampled with them by the STN (None in the CroCo-style ablation)."""

    def to(self, device: torch.device | str) -> LayerReferenceTerms:
        return LayerReferenceTerms(
            *(None if t is None else t.to(device) for t in (self.stn, self.key_values))
        )


def isolation_mask(masked: torch.Tensor) -> torch.Tensor:
    """[B, 1, 1 + M, 1 + M] self-attention mask (True = may read) for masked positions
    [B, M]: a masked row reads masked columns only; CLS and visible rows read everything.
    Every row can read itself, so no softmax is left without a key."""
    cls = torch.zeros_like(masked[:, :1])
    rows = torch.cat([cls, masked], dim=1)
    return (~rows.unsqueeze(2) | rows.unsqueeze(1)).unsqueeze(1)


def tokens_to_maps(tokens: torch.Tensor, grid: int) -> torch.Tensor:
    """[..., M, D] -> [..., D, grid, grid].

    The same view as ``unflatten``, spelled with the leading sizes read off ``tokens``:
    an exported graph then keeps them dynamic (``unflatten`` fixes them to the traced
    sizes), so one export serves any number of references."""
    return tokens.transpose(-1, -2).view(*tokens.shape[:-2], tokens.shape[-1], grid, grid)


class ReferencePointer(nn.Module):
    """Predicted CNN features as a convex mix of the references' own frozen features.

    Each query patch's final token asks which reference cells it looks like (a scaled
    dot product against every cell of every reference) and returns the attention-weighted
    mean of those cells' cell-normalised CNN features. The output lies in the convex hull
    of what the references show, so no weight of the network can fill a hidden patch
    from the query's visible neighbours: the error is low only where some reference shows
    what the patch should be, in the same units as the nearest-reference distance.
    """

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.query = nn.Linear(dim, dim)
        self.key = nn.Linear(dim, dim)
        self.scale = dim**-0.5

    def forward(
        self, tokens: torch.Tensor, ref_tokens: torch.Tensor, ref_features: torch.Tensor
    ) -> torch.Tensor:
        """tokens [B, M, D], ref_tokens [B or 1, N, M, D], ref_features [B or 1, N, M, F]
        -> [B, M, F]."""
        return self.mix(self.logits(tokens, ref_tokens), ref_features)

    @staticmethod
    def mix(logits: torch.Tensor, ref_features: torch.Tensor) -> torch.Tensor:
        """logits [B, M, N*M] (``logits``), ref_features [B or 1, N, M, F] -> [B, M, F]:
        apart from ``logits`` so training can score the choice and the mix of one pass."""
        return logits.softmax(dim=-1) @ ref_features.flatten(1, 2).to(logits.dtype)

    def logits(self, tokens: torch.Tensor, ref_tokens: torch.Tensor) -> torch.Tensor:
        """[B, M, N*M] how strongly each query patch points at each reference patch
        (references in order, each's patches row-major): the choice before the mix."""
        keys = self.key(ref_tokens.flatten(1, 2))  # [B or 1, N*M, D]
        return self.query(tokens) @ keys.transpose(-1, -2) * self.scale


class DecoderLayer(nn.Module):
    """Self-attention -> align + select -> cross-attention -> MLP, each add & norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        dim, heads = cfg.decoder_embed_dim, cfg.decoder_num_heads
        self.cfg = cfg
        self.self_attn = Attention(dim, heads, qkv_bias=True)
        self.norm1 = nn.LayerNorm(dim)
        self.stn = FeatureSTN(dim, cfg.grid_size, cfg.stn_channels) if cfg.use_stn else None
        self.cross_attn = PositionSpecificCrossAttention(dim, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = Mlp(dim, int(dim * cfg.mlp_ratio))
        self.norm3 = nn.LayerNorm(dim)

    def reference_terms(self, refs: torch.Tensor) -> LayerReferenceTerms:
        """What this layer needs from the references [B, N, M, D] alone, whatever the query."""
        g = self.cfg.grid_size
        stn = None if self.stn is None else self.stn.reference_term(tokens_to_maps(refs, g))
        if not self.cfg.use_selection:
            return LayerReferenceTerms(stn, None)
        return LayerReferenceTerms(stn, self.cross_attn.pool_key_values(refs, bias=False))

    def align(
        self, query: torch.Tensor, refs: torch.Tensor, terms: LayerReferenceTerms
    ) -> tuple[torch.Tensor, torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None]:
        """References [B or 1, N, M, D] and their unbiased keys and values (if any) warped
        into the frame of query tokens [B, M, D], with one resampling for both (while
        exporting, the keys and values come as a pair, [B, N, M, D] each)."""
        b, d, kv = query.shape[0], query.shape[-1], terms.key_values
        if self.stn is None:
            return refs.expand(b, -1, -1, -1), None if kv is None else kv.expand(b, -1, -1, -1)
        g = self.cfg.grid_size
        theta = self.stn.theta(tokens_to_maps(query, g), tokens_to_maps(refs, g), terms.stn)
        if torch.onnx.is_in_onnx_export():
            # one matmul per part, keys and values apart: in an exported graph the
            # concatenation, the slices back out of it and the later split into keys and
            # values would each copy every resampled value once per pass; split here, the
            # copy is of the [1, N, M, 2D] reference terms instead
            weights = sampling_weights(theta, (g, g))
            pool = resample_tokens(refs, weights)
            if kv is None:
                return pool, None
            return pool, tuple(resample_tokens(half, weights) for half in kv.split(d, dim=-1))
        both = refs if kv is None else torch.cat([refs, kv], dim=-1)
        aligned = resample_tokens(both, sampling_weights(theta, (g, g)))
        return aligned[..., :d], None if kv is None else aligned[..., d:]

    def forward(
        self,
        h: torch.Tensor,
        refs: torch.Tensor,
        aat: torch.Tensor | None,
        terms: LayerReferenceTerms | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """h [B, 1 + M, D] (CLS first), refs [B or 1, N, M, D], aat [32 + M, D] or None;
        ``terms`` is ``reference_terms(refs)`` when the caller has it already;
        ``attn_mask`` [B, 1, 1 + M, 1 + M] (True = may read) limits self-attention."""
        h = self.norm1(h + self.self_attn(h, attn_mask=attn_mask))
        cls, q = h[:, :1], h[:, 1:]
        pool, key_values = self.align(q, refs, terms or self.reference_terms(refs))
        if self.cfg.use_selection:
            index = select_top_k(q, pool, self.cfg.top_k, self.cfg.sim_weight, self.cfg.sim_sigma)
            shared = None if aat is None else aat.unsqueeze(0)
            key_values = self.cross_attn.add_pool_bias(key_values)
            key_values = (
                tuple(half.flatten(1, 2) for half in key_values)
                if isinstance(key_values, tuple)
                else key_values.flatten(1, 2)
            )
            update = self.cross_attn(q, shared, key_values, index)
        else:  # CroCo-style ablation: every position sees every aligned reference token
            shared = pool.flatten(1, 2)
            if aat is not None:
                shared = torch.cat([aat.unsqueeze(0).expand(q.shape[0], -1, -1), shared], 1)
            update = self.cross_attn(q, shared)
        # The CLS token only takes part in self-attention; cross-attention is per patch.
        h = torch.cat([cls, self.norm2(q + update)], dim=1)
        return self.norm3(h + self.mlp(h))


class ReconstructionDecoder(nn.Module):
    """Encoder tokens of the visible query + reference tokens -> pixels of every patch."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        dim = cfg.decoder_embed_dim
        self.cfg = cfg
        self.query_embed = nn.Linear(cfg.embed_dim, dim)
        self.ref_embed = nn.Linear(cfg.embed_dim, dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.register_buffer("pos_embed", sincos_2d(dim, cfg.grid_size), persistent=False)
        if cfg.use_aat:
            self.global_tokens = nn.Parameter(torch.zeros(cfg.num_global_tokens, dim))
            self.local_tokens = nn.Parameter(torch.zeros(cfg.num_patches, dim))
        self.layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.decoder_depth))
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, cfg.patch_size**2 * 3)
        # CNN tokens: the decoder also predicts the frozen CNN's (cell-normalised) features
        # of every patch, a target whose error sees texture and parts, not only colour:
        # regressed by a linear head, or read from the references (``feature_readout``).
        reads = cfg.cnn_tokens and cfg.feature_readout == "references"
        self.feature_head = (
            nn.Linear(dim, cfg.feature_dim) if cfg.cnn_tokens and not reads else None
        )
        self.pointer = ReferencePointer(dim) if reads else None

    def anomaly_agnostic_tokens(self) -> torch.Tensor | None:
        """[32 + M, D]: global priors, then position-tagged local priors."""
        if not self.cfg.use_aat:
            return None
        return torch.cat([self.global_tokens, self.local_tokens + self.pos_embed[0, 1:]], 0)

    def reference_terms(self, refs: torch.Tensor) -> tuple[LayerReferenceTerms, ...]:
        """Per layer, what depends on the references [B, N, M, D'] alone: every layer
        aligns these same projected tokens, whatever the query."""
        return tuple(layer.reference_terms(refs) for layer in self.layers)

    def forward(
        self,
        latent: torch.Tensor,
        ids_restore: torch.Tensor,
        refs: torch.Tensor,
        terms: tuple[LayerReferenceTerms, ...] | None = None,
    ) -> torch.Tensor:
        """latent [B, 1 + V, d] (CLS first), refs [B or 1, N, M, D'] -> the final normalised
        tokens [B, M, D'] of every patch (CLS dropped), which the heads turn into pixels
        (and features); ``terms`` is ``reference_terms(refs)`` when the caller has it."""
        x = self.query_embed(latent)
        b, m = ids_restore.shape
        fill = self.mask_token.expand(b, m + 1 - x.shape[1], -1)
        patches = gather_tokens(torch.cat([x[:, 1:], fill], dim=1), ids_restore)
        h = torch.cat([x[:, :1], patches], dim=1) + self.pos_embed
        aat = self.anomaly_agnostic_tokens()
        if terms is None:
            terms = self.reference_terms(refs)
        attn_mask = None
        if self.cfg.isolate_masked:  # ids_restore points masked patches past the visible ones
            attn_mask = isolation_mask(ids_restore >= x.shape[1] - 1)
        for layer, layer_terms in zip(self.layers, terms, strict=True):
            h = layer(h, refs, aat, layer_terms, attn_mask)
        return self.norm(h)[:, 1:]
