"""The arithmetic of PADFormer's error maps, written once for torch tensors and numpy
arrays: the colour error (the paper's LAB, or RGB for the ablation) and the predicted
feature error of models with CNN tokens.

``paper_metrics`` calls it with tensors on the detector's device, and the line's numpy
scoring (``line_scoring``) with the arrays its graphs returned, so the torch detector and
the torch-free line compute each error by the same steps and differ by float32 rounding
only (``array_ops``). No torch is imported here.
"""

from __future__ import annotations

from typing import Literal

from padformer_edge.detect.array_ops import Array, ops_of
from padformer_edge.detect.readout_constants import BLUR_KERNEL, BLUR_SIGMA

ColourSpace = Literal["lab", "rgb"]


def convert(images01: Array, space: ColourSpace) -> Array:
    """``[..., 3, H, W]`` in [0, 1] in the metric's colour space."""
    return ops_of(images01).rgb_to_lab(images01) if space == "lab" else images01


def colour_target(query01: Array, space: ColourSpace) -> Array:
    """What every pass is compared with: the query in the colour space, blurred by the
    paper's Gaussian (sigma 1.4, 7 x 7), since a reconstruction never renders the finest
    texture."""
    return ops_of(query01).gaussian_blur(convert(query01, space), BLUR_KERNEL, BLUR_SIGMA)


def colour_errors(
    target: Array, recon01: Array, size: tuple[int, int], space: ColourSpace
) -> Array:
    """``[P, H, W]`` squared colour distances between the blurred query and each of the
    ``[P, 3, S, S]`` reconstructions brought to the query's ``size``."""
    ops = ops_of(recon01)
    recon = convert(ops.clip01(ops.upsample(recon01, size)), space)
    return ops.sum(ops.square(target - recon), 1)


def feature_errors(
    target: Array,
    predicted: Array,
    weights: Array | None,
    size: tuple[int, int],
    cells: int,
    grid: int,
    hidden_only: bool,
) -> Array:
    """``[P, H, W]`` per-cell squared distances between the query's frozen CNN features
    (``[1, M, F]``) and each pass's prediction of them (``[P, M, F]``), brought from the
    cell grid to the query's ``size``. ``hidden_only``: each patch's error weighed by the
    ``[P, M]`` share of passes that hid it (``masks.hidden_weights``)."""
    ops = ops_of(predicted)
    squared = ops.square(ops.as_float32(predicted) - target)  # [P, M, C * cells * cells]
    per_cell = squared.reshape(*squared.shape[:2], -1, cells * cells).sum(-2)
    if hidden_only:
        if weights is None:
            raise ValueError("this model scores its hidden patches only: pass their weights.")
        per_cell = per_cell * ops.as_float32(weights[..., None])
    maps = ops.unfold_from_patches(per_cell, cells, grid)  # [P, 1, g * c, g * c]
    return ops.upsample(maps, size)[:, 0]
