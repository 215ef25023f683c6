"""Within-view references: N geometric variants of the query itself.

The within-view stage has no second view of the object, so references are made by
rotating and elastically deforming the query (kornia's warps). Parameters are drawn from
an explicit ``torch.Generator`` rather than kornia's random modules so that a sample is a
pure function of (seed, epoch, index): resuming a run reproduces the same references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from kornia.geometry.transform import elastic_transform2d, rotate

# Standard deviation of i.i.d. U(-1, 1) noise after a unit-sum 2-D Gaussian of sigma s is
# sqrt(1/3) / (2 sqrt(pi) s); dividing by it turns a wanted displacement into kornia's alpha.
_SMOOTHED_NOISE_STD_TIMES_SIGMA = math.sqrt(1 / 3) / (2 * math.sqrt(math.pi))


@dataclass(frozen=True)
class WithinViewAugment:
    """Random rotation up to ``max_rotation`` degrees, then an elastic warp.

    ``elastic_strength`` is the typical displacement as a fraction of the image side and
    ``elastic_scale`` the size of the deformation's smooth bumps, also as a fraction of the
    side, so the same recipe deforms a 64-pixel and a 224-pixel image alike.
    """

    max_rotation: float = 30.0
    elastic_strength: float = 0.02
    elastic_scale: float = 0.08

    def __call__(self, image: torch.Tensor, count: int, generator: torch.Generator) -> torch.Tensor:
        """``count`` variants of ``image`` [3, H, W] in [0, 1] -> [count, 3, H, W]."""
        _, height, width = image.shape
        batch = image.unsqueeze(0).expand(count, -1, -1, -1).contiguous()
        angles = (torch.rand(count, generator=generator) * 2 - 1) * self.max_rotation
        # Border padding fills the rotated-in corners with the background an object sits on
        # instead of black wedges the model would have to learn to ignore.
        out = rotate(batch, angles, padding_mode="border", align_corners=False)
        if self.elastic_strength > 0:
            sigma = max(self.elastic_scale * min(height, width), 1.0)
            kernel = min(2 * math.ceil(3 * sigma) + 1, 2 * (min(height, width) // 2) - 1)
            noise = torch.rand(count, 2, height, width, generator=generator) * 2 - 1
            alpha = 2 * self.elastic_strength * sigma / _SMOOTHED_NOISE_STD_TIMES_SIGMA
            out = elastic_transform2d(
                out,
                noise,
                kernel_size=(kernel, kernel),
                sigma=(sigma, sigma),
                alpha=(alpha, alpha),
                padding_mode="border",
            )
        return out.clamp_(0.0, 1.0)
