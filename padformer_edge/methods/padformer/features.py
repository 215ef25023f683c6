"""PADFormer's whole-image features, by which references are chosen for a profile on one
of its metrics (``profiles.selection`` picks the views least alike).

Mean-pooled encoder features: poses differ in where the part sits on the grid, and
pooling removes that position while keeping what is seen.
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
