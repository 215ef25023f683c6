"""Choosing which good images become a profile's references.

A query can show the part from any side, and PADFormer can only copy appearance from a
reference that saw the same surface. With more candidate images than reference slots,
the references should therefore cover as many viewpoints as possible: farthest-point
sampling in the encoder's feature space picks each next image as the one least like any
already chosen. Mean-pooled patch features are used because poses differ in where the
part sits on the grid, and pooling removes that position while keeping what is seen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.model.padformer import PADFormer

FEATURE_BATCH = 16


@torch.inference_mode()
def pooled_features(model: PADFormer, images: Sequence[np.ndarray]) -> torch.Tensor:
    """``[K, D]`` mean-pooled encoder features of whole images, on the CPU in float32."""
    device = next(model.parameters()).device
    out = []
    for start in range(0, len(images), FEATURE_BATCH):
        batch = torch.stack(
            [to_unit_tensor(image, device) for image in images[start : start + FEATURE_BATCH]]
        )
        model_in = model.normalize(resize_square(batch, model.config.img_size))
        out.append(model.encode_features(model_in).float().mean(dim=1).cpu())
    return torch.cat(out)


def farthest_point_order(features: torch.Tensor, count: int) -> list[int]:
    """Indices of ``count`` rows of ``features`` chosen by farthest-point sampling.

    The first pick is the row nearest the mean (the most typical view, so a one-shot
    profile gets a representative image rather than an outlier); every later pick is the
    row whose distance to its nearest chosen row is largest. Ties go to the lower index,
    so the choice is deterministic.
    """
    if not 1 <= count <= features.shape[0]:
        raise ValueError(f"count must be in [1, {features.shape[0]}], got {count}")
    feats = features.double()
    first = int(torch.cdist(feats.mean(0, keepdim=True), feats)[0].argmin())
    chosen = [first]
    nearest = torch.cdist(feats[first : first + 1], feats)[0]
    while len(chosen) < count:
        pick = int(nearest.argmax())
        chosen.append(pick)
        nearest = torch.minimum(nearest, torch.cdist(feats[pick : pick + 1], feats)[0])
    return chosen


def select_references(model: PADFormer, images: Sequence[np.ndarray], shots: int) -> list[int]:
    """Indices (sorted) of the ``shots`` images that together cover the most viewpoints."""
    if shots >= len(images):
        return list(range(len(images)))
    return sorted(farthest_point_order(pooled_features(model, images), shots))
