"""The shared ViT encoder and the MAE-style masking it applies to the query.

Parameter names follow MAE and timm (``patch_embed.proj``, ``cls_token``, ``blocks.i``,
``norm``) so an official MAE or timm checkpoint loads into it key for key.
"""

from __future__ import annotations

from functools import partial

import torch
import torch.nn.functional as F
from timm.layers import PatchEmbed
from timm.models.vision_transformer import Block
from torch import nn

from padformer_edge.model.backbone import Stride8Features, fold_to_patches
from padformer_edge.model.config import ModelConfig
from padformer_edge.model.posembed import sincos_2d


def random_mask(
    batch: int, num_patches: int, ratio: float, generator: torch.Generator | None = None
) -> torch.Tensor:
    """Bool [batch, num_patches], True = masked, exactly ``int(num_patches * ratio)`` per row."""
    device = generator.device if generator is not None else "cpu"
    noise = torch.rand(batch, num_patches, generator=generator, device=device)
    ranks = noise.argsort(dim=1).argsort(dim=1)
    return ranks < int(num_patches * ratio)


def block_mask(
    batch: int,
    grid: int,
    ratio: float,
    block: int,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Bool [batch, grid * grid] with the same count as ``random_mask``, in blobs about
    ``block`` patches across: the top ranks of a random field drawn on a coarse grid and
    smoothly upsampled. A scattered mask leaves every hidden patch next to visible ones that
    the decoder can copy from; blobs leave it nothing nearby, so it must read the references.
    """
    device = generator.device if generator is not None else "cpu"
    coarse = -(-grid // block) + 1
    field = torch.rand(batch, 1, coarse, coarse, generator=generator, device=device)
    field = F.interpolate(field, size=(grid, grid), mode="bilinear", align_corners=True)
    # a tiny independent draw breaks the ties a smooth field can have
    jitter = torch.rand(batch, grid * grid, generator=generator, device=device)
    field = field.flatten(1) + 1e-4 * jitter
    ranks = (-field).argsort(dim=1).argsort(dim=1)
    return ranks < int(grid * grid * ratio)


def shuffle_ids(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """(ids_shuffle, ids_restore, visible count) for a mask with the same count per row.

    ``ids_shuffle`` lists visible patches first (in patch order), then masked ones;
    ``ids_restore`` is its inverse permutation.
    """
    masked = mask.sum(dim=1)
    if masked.numel() and bool((masked != masked[0]).any()):
        raise ValueError("every row of a mask must mask the same number of patches.")
    ids_shuffle = mask.to(torch.uint8).argsort(dim=1, stable=True)
    ids_restore = ids_shuffle.argsort(dim=1)
    visible = mask.shape[1] - (int(masked[0]) if masked.numel() else 0)
    return ids_shuffle, ids_restore, visible


def blank_masked_patches(images: torch.Tensor, mask: torch.Tensor, patch: int) -> torch.Tensor:
    """Zero (in normalised units) the pixels of every masked patch: [B, C, H, W], mask [B, M].

    A CNN token's receptive field reaches into its neighbours, so dropping masked tokens
    after the CNN would still let their content leak into the visible ones around them.
    """
    grid = images.shape[-1] // patch
    keep = (~mask).to(images.dtype).view(-1, 1, grid, grid)
    keep = keep.repeat_interleave(patch, dim=2).repeat_interleave(patch, dim=3)
    return images * keep


class CNNPatchEmbed(nn.Module):
    """Frozen stride-8 cells of the config's EfficientNet-Lite (``token_source``) folded
    to the patch grid, then a linear projection to the encoder width: the edge preset's
    replacement for ``PatchEmbed``."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cells = cfg.cells_per_side
        self.cnn = Stride8Features(cfg.token_source)
        self.proj = nn.Linear(cfg.feature_dim, cfg.embed_dim)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """[B, M, feature_dim] folded CNN features (no gradient: the CNN is frozen)."""
        with torch.no_grad():
            return fold_to_patches(self.cnn(images), self.cells)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.proj(self.features(images))


def gather_tokens(x: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    """x[b, ids[b, i]] for token tensors [B, L, D]."""
    return torch.gather(x, 1, ids.unsqueeze(-1).expand(-1, -1, x.shape[-1]))


class ViTEncoder(nn.Module):
    """Patch embedding, CLS token, fixed position table, transformer blocks, final norm."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.patch_embed: nn.Module = (
            CNNPatchEmbed(cfg)
            if cfg.cnn_tokens
            else PatchEmbed(cfg.img_size, cfg.patch_size, 3, cfg.embed_dim)
        )
        self.cls_token = nn.Parameter(torch.zeros(1, 1, cfg.embed_dim))
        self.register_buffer("pos_embed", sincos_2d(cfg.embed_dim, cfg.grid_size), persistent=False)
        norm = partial(nn.LayerNorm, eps=1e-6)
        self.blocks = nn.ModuleList(
            Block(cfg.embed_dim, cfg.num_heads, cfg.mlp_ratio, qkv_bias=True, norm_layer=norm)
            for _ in range(cfg.depth)
        )
        self.norm = norm(cfg.embed_dim)

    def forward(
        self,
        images: torch.Tensor,
        ids_keep: torch.Tensor | None = None,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """[B, 1 + L, D] with CLS first; ``ids_keep`` [B, L] picks the visible patches and
        ``rows`` [B] each row's image, so masks over one image embed its patches once."""
        x = self.patch_embed(images) + self.pos_embed[:, 1:]
        if rows is not None:
            x = x[rows]
        if ids_keep is not None:
            x = gather_tokens(x, ids_keep)
        cls = (self.cls_token + self.pos_embed[:, :1]).expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1)
        for block in self.blocks:
            x = block(x)
        return self.norm(x)
