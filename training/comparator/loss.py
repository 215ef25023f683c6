"""The comparator's loss: focal and dice on the cells' defect share, plus an image term.

Targets are soft: each cell's share of defect pixels, so a defect smaller than a cell
still asks for a raised cell, in proportion. The dice term is taken over the whole batch,
so a batch of good images does not divide by zero and a small defect weighs as much as a
large one in the sum. The image term fits each image's logit to whether it has a defect
at all, the decision the image AUROC measures. That logit is the mean of the image's
``top_k`` largest cell logits: with 1 (the default) the maximum, so one cell decides;
with a few, a crack or a speck that raises a few cells carries the image as a large
defect does, while one stray cell of a good image is outvoted by its neighbours, and the
gradient reaches every one of the k cells instead of the largest alone.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def cell_targets(masks: torch.Tensor, grid: int) -> torch.Tensor:
    """``[B, H, W]`` boolean masks -> ``[B, grid, grid]`` share of defect pixels per cell."""
    return F.adaptive_avg_pool2d(masks.float().unsqueeze(1), grid).squeeze(1)


def focal_loss(logits: torch.Tensor, targets: torch.Tensor, gamma: float = 2.0) -> torch.Tensor:
    bce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p = torch.sigmoid(logits)
    weight = (targets - p).abs().pow(gamma)
    return (weight * bce).mean()


def dice_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(logits)
    overlap = (p * targets).sum()
    return 1.0 - (2.0 * overlap + 1.0) / (p.sum() + targets.sum() + 1.0)


def image_logits(logits: torch.Tensor, top_k: int = 1) -> torch.Tensor:
    """``[B, h, w]`` cell logits -> ``[B]``: the mean of each image's ``top_k`` largest
    (all of them when the grid has fewer cells); 1 is the maximum."""
    cells = logits.flatten(1)
    if top_k == 1:
        return cells.amax(1)
    return cells.topk(min(top_k, cells.shape[1]), dim=1).values.mean(1)


def image_loss(logits: torch.Tensor, targets: torch.Tensor, top_k: int = 1) -> torch.Tensor:
    labels = (targets.flatten(1).amax(1) > 0).float()
    return F.binary_cross_entropy_with_logits(image_logits(logits, top_k), labels)


def comparator_loss(
    logits: torch.Tensor, targets: torch.Tensor, image_weight: float = 0.5, image_top_k: int = 1
) -> dict[str, torch.Tensor]:
    """The loss terms and their sum (``loss``) for ``[B, h, w]`` logits and soft targets;
    ``image_top_k`` cells make each image's logit (``image_logits``)."""
    terms = {
        "focal": focal_loss(logits, targets),
        "dice": dice_loss(logits, targets),
        "image": image_loss(logits, targets, image_top_k),
    }
    terms["loss"] = terms["focal"] * 10.0 + terms["dice"] + image_weight * terms["image"]
    return terms
