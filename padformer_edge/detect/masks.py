"""Which patches each inference pass hides from the encoder.

The paper draws every pass's mask at random and relies on ``1 - (1 - r)^I`` coverage: with
``r = 0.4`` and ``I = 15`` a patch escapes all masks with probability ``0.6^15``, which over
thousands of patches per day still leaves some never reconstructed from the references.
The ``balanced`` schedule removes that chance: it walks one random permutation of the
patches cyclically, so every patch is hidden ``floor(I*k/M)`` or ``ceil(I*k/M)`` times
(exactly ``I*k/M`` when that is whole), which is the most even split possible with ``k``
hidden patches per pass.
"""

from __future__ import annotations

import numpy as np
import torch

from padformer_edge.detect.settings import MASK_SCHEDULES
from padformer_edge.errors import UserError
from padformer_edge.model.encoder import shuffle_ids


def masked_per_pass(num_patches: int, mask_ratio: float) -> int:
    """Hidden patches per pass; truncation matches the model's own ``random_mask``."""
    if not 0.0 < mask_ratio < 1.0:
        raise UserError(f"mask ratio {mask_ratio} is outside (0, 1); use a value such as 0.4.")
    count = int(num_patches * mask_ratio)
    if count < 1:
        raise UserError(f"mask ratio {mask_ratio} hides no patch of {num_patches}; raise it.")
    return count


def random_masks(
    passes: int, num_patches: int, mask_ratio: float, generator: torch.Generator
) -> torch.Tensor:
    """``[passes, M]`` booleans, True = hidden; each row an independent uniform draw."""
    count = masked_per_pass(num_patches, mask_ratio)
    order = torch.rand(passes, num_patches, generator=generator).argsort(dim=1)
    masks = torch.zeros(passes, num_patches, dtype=torch.bool)
    return masks.scatter_(1, order[:, :count], True)


def balanced_masks(
    passes: int, num_patches: int, mask_ratio: float, generator: torch.Generator
) -> torch.Tensor:
    """``[passes, M]`` booleans in which per-patch hide counts differ by at most one."""
    count = masked_per_pass(num_patches, mask_ratio)
    order = torch.randperm(num_patches, generator=generator)
    slots = torch.arange(passes * count).view(passes, count) % num_patches
    masks = torch.zeros(passes, num_patches, dtype=torch.bool)
    return masks.scatter_(1, order[slots], True)


def make_masks(
    schedule: str, passes: int, num_patches: int, mask_ratio: float, seed: int
) -> torch.Tensor:
    """The whole schedule for one detection, fixed by ``seed`` alone."""
    if passes < 2:
        raise UserError(
            f"passes={passes} leaves no variance across passes; use at least 2 (the paper uses 15)."
        )
    generator = torch.Generator().manual_seed(seed)
    if schedule == "random":
        return random_masks(passes, num_patches, mask_ratio, generator)
    if schedule == "balanced":
        return balanced_masks(passes, num_patches, mask_ratio, generator)
    raise UserError(
        f"mask schedule '{schedule}' is unknown; choose one of {', '.join(MASK_SCHEDULES)}."
    )


def hidden_weights(masks: torch.Tensor) -> torch.Tensor:
    """``[P, M]`` weight of each pass's error at each patch when only hidden patches count:
    ``P / n`` where the pass hid the patch (``n`` passes did) and 0 where it showed it, so
    the mean over the ``P`` passes is the mean over the passes that hid each patch, whatever
    the schedule. A patch no pass hid gets 0: nothing was predicted for it."""
    passes = masks.shape[0]
    hidden_in = masks.sum(dim=0, keepdim=True).clamp_min(1).to(torch.float32)
    return masks.to(torch.float32) * (passes / hidden_in)


def mask_indices(masks: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """(ids_keep [P, V], ids_restore [P, M]) as int64 arrays for bool masks [P, M]: the
    model's own ``shuffle_ids``, computed once per mask schedule outside the graph (a
    stable argsort has no ONNX operator). The detector's exported runtimes and the
    export's line schedule both feed the graphs these, so they live with the masks."""
    ids_shuffle, ids_restore, visible = shuffle_ids(masks.cpu())
    return ids_shuffle[:, :visible].numpy(), ids_restore.numpy()
