"""How a map becomes what an operator sees and its image score: the readout every
method shares (its mean-or-filtered map, smoothed by a Gaussian counted in model pixels,
whose maximum is the score), and the score of a method that reads no pass.

Free of any model: PADFormer's metrics (``methods.padformer``, ``methods.fused``) and
the learned comparison (``methods.compare``) read their maps through it alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import kornia
import torch
import torch.nn.functional as F

from padformer_edge.detect.scoring_config import (
    BLUR_KERNEL,
    BLUR_SIGMA,
    MAX_READOUT_SIGMA,
    PAPER_READOUT_SETTINGS,
    SMOOTH_MAX_SIGMA,
)


@dataclass(frozen=True)
class Readout:
    """How one job (the anomaly map, or the map whose maximum is the image score) reads
    the passes of one error mix: the paper's consistency filter or the plain pass mean,
    then a Gaussian of ``sigma`` pixels of the model's input (0: none).

    Sigma is counted in model pixels so that a readout chosen on 224 px renders smooths
    the same share of the part in a 20 MP camera frame.
    """

    consistency_filter: bool = True
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.sigma <= MAX_READOUT_SIGMA:
            raise ValueError(
                f"readout sigma must lie in [0, {MAX_READOUT_SIGMA}], not {self.sigma}."
            )

    def apply(self, mean: torch.Tensor, variance: torch.Tensor, scale: float) -> torch.Tensor:
        """The ``[H, W]`` map of this readout; ``scale`` is query pixels per model pixel."""
        amap = consistency_filter(mean, variance) if self.consistency_filter else mean
        return smooth(amap, self.sigma * scale)


PAPER_READOUT = Readout(**PAPER_READOUT_SETTINGS)  # type: ignore[arg-type]
"""The paper's map and score: the consistency-filtered pass mean, unsmoothed."""


def blur(images: torch.Tensor) -> torch.Tensor:
    """The paper's query smoothing: Gaussian, sigma 1.4, 7x7, per channel."""
    return kornia.filters.gaussian_blur2d(
        images, (BLUR_KERNEL, BLUR_KERNEL), (BLUR_SIGMA, BLUR_SIGMA), border_type="reflect"
    )


def smooth(amap: torch.Tensor, sigma: float) -> torch.Tensor:
    """``[H, W]`` map blurred by a Gaussian of ``sigma`` pixels (0: unchanged).

    A wide blur on a large camera frame runs on a frame shrunk by an integer factor (area
    average) and is brought back bilinearly: the result differs from a full-size blur by
    less than the blur removes, and a 20 MP frame does not need a 2,000-tap kernel.
    """
    if sigma <= 0:
        return amap
    factor = max(1, int(sigma // SMOOTH_MAX_SIGMA))
    size = amap.shape[-2:]
    small = amap[None, None]
    if factor > 1:
        small = F.avg_pool2d(small, factor, ceil_mode=True)
    sigma_small = sigma / factor
    radius = min(int(4 * sigma_small + 0.5), min(small.shape[-2:]) - 1)
    if radius < 1:
        return amap
    kernel = 2 * radius + 1
    small = kornia.filters.gaussian_blur2d(
        small, (kernel, kernel), (sigma_small, sigma_small), border_type="reflect"
    )
    return upsample(small, (int(size[0]), int(size[1])))[0, 0]




def upsample(images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``[B, C, h, w]`` to ``size`` (a no-op at that size already)."""
    if tuple(images.shape[-2:]) == tuple(size):
        return images
    return F.interpolate(images, size=size, mode="bilinear", align_corners=False)


def consistency_filter(mean: torch.Tensor, variance: torch.Tensor) -> torch.Tensor:
    """Keep ``mean`` where ``variance`` is strictly above its median, zero elsewhere.

    The median is the lower middle value (``kthvalue``, which unlike ``quantile`` has no
    size limit), and ties at it are dropped, so at least half of the pixels are always
    zeroed: a map whose variance is flat everywhere has nothing inconsistent to report.
    """
    flat = variance.reshape(-1)
    median = flat.kthvalue((flat.numel() + 1) // 2).values
    return torch.where(variance > median, mean, torch.zeros_like(mean))


@dataclass
class ScoredQuery:
    """The anomaly map of one query, its score and per-pass error summaries."""

    anomaly_map: torch.Tensor
    score: float
    pass_mean: list[float]
    pass_max: list[float]


class PasslessMetric(Protocol):
    """A metric that reads no reconstruction pass (the distance, the learned comparison):
    each query's maps, each read by its job's readout at the metric's input size."""

    input_size: int
    map_readout: Readout
    score_readout: Readout


def score_without_passes(
    metric: PasslessMetric, query01: torch.Tensor, maps: list[torch.Tensor]
) -> ScoredQuery:
    """Score one query (``[1, 3, H, W]`` in [0, 1]) from the maps a metric that reads no
    pass made for it (the map's job first, the score's last), each read with its job's
    readout, as ``score_query`` would read passes that all agree (no per-pass summaries,
    since there are no passes)."""
    size = (query01.shape[-2], query01.shape[-1])
    scale = max(size) / metric.input_size  # query pixels per model pixel
    flat = torch.zeros_like(maps[0])  # no passes, no variance
    anomaly_map = metric.map_readout.apply(maps[0], flat, scale)
    score_map = metric.score_readout.apply(maps[-1], flat, scale)
    return ScoredQuery(anomaly_map, float(score_map.max()), [], [])
