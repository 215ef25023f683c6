"""A stand-in for PADFormer with a known, ideal behaviour, for testing detection.

It follows the model API (normalize, encode_references, reconstruct, encode_features,
config) but reconstructs like a perfect anomaly-free model would for references that
show the product in the query's pose: visible patches are copied from the query and
hidden patches are filled from the mean of the references. A defect is therefore wrong
exactly in the passes that hide it, which is what the variance filter looks for.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from padformer_edge.model.padformer import Reconstruction


@dataclass(frozen=True)
class DoubleConfig:
    img_size: int = 32
    patch_size: int = 8
    norm_mean: tuple[float, float, float] = (0.485, 0.456, 0.406)
    norm_std: tuple[float, float, float] = (0.229, 0.224, 0.225)
    cnn_tokens: bool = False  # pixel tokens: no predicted features

    @property
    def grid_size(self) -> int:
        return self.img_size // self.patch_size

    @property
    def num_patches(self) -> int:
        return self.grid_size**2


@dataclass
class MeanReferenceCache:
    mean: torch.Tensor  # [B, 3, S, S], normalised


class CleanReconstructor(nn.Module):
    """Copies visible query patches, fills hidden ones from the references' mean."""

    def __init__(self, config: DoubleConfig | None = None) -> None:
        super().__init__()
        self.config = config or DoubleConfig()
        self.register_buffer("mean", torch.tensor(self.config.norm_mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(self.config.norm_std).view(1, 3, 1, 1))
        self.references_encoded = 0

    def normalize(self, x01: torch.Tensor) -> torch.Tensor:
        return (x01 - self.mean) / self.std

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.std + self.mean

    def encode_references(self, refs: torch.Tensor) -> MeanReferenceCache:
        self.references_encoded += refs.shape[0] * refs.shape[1]
        return MeanReferenceCache(refs.mean(dim=1))

    def pixel_mask(self, mask: torch.Tensor) -> torch.Tensor:
        grid, patch = self.config.grid_size, self.config.patch_size
        cells = mask.view(-1, 1, grid, grid).float()
        return nn.functional.interpolate(cells, scale_factor=patch, mode="nearest").bool()

    def reconstruct(
        self,
        query: torch.Tensor,
        cache: MeanReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> torch.Tensor:
        query = query if rows is None else query[rows]
        return torch.where(self.pixel_mask(mask), cache.mean.expand_as(query), query)

    def reconstruct_all(
        self,
        query: torch.Tensor,
        cache: MeanReferenceCache,
        mask: torch.Tensor,
        rows: torch.Tensor | None = None,
    ) -> Reconstruction:
        return Reconstruction(self.reconstruct(query, cache, mask, rows), None)

    def encode_features(self, images: torch.Tensor) -> torch.Tensor:
        """Raw pixels of each patch as its feature vector: ``[B, M, p*p*3]``."""
        p = self.config.patch_size
        patches = images.unfold(2, p, p).unfold(3, p, p)  # B, 3, g, g, p, p
        return patches.permute(0, 2, 3, 1, 4, 5).reshape(images.shape[0], -1, 3 * p * p)
