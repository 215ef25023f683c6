"""The image arithmetic of detection in torch: the query blur and resizes the metrics
call, and ``array_ops.ArrayOps`` on tensors, the primitives the shared scoring arithmetic
composes (``numpy_ops`` is their numpy counterpart on a torch-free line)."""

from __future__ import annotations

from collections.abc import Sequence

import kornia
import numpy as np
import torch
import torch.nn.functional as F

from padformer_edge.detect.readout_constants import BLUR_KERNEL, BLUR_SIGMA
from padformer_edge.model.backbone import unfold_from_patches


def blur(images: torch.Tensor) -> torch.Tensor:
    """The paper's query smoothing: Gaussian, sigma 1.4, 7x7, per channel."""
    return kornia.filters.gaussian_blur2d(
        images, (BLUR_KERNEL, BLUR_KERNEL), (BLUR_SIGMA, BLUR_SIGMA), border_type="reflect"
    )


def upsample(images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Bilinear resize of ``[B, C, h, w]`` to ``size`` (a no-op at that size already)."""
    if tuple(images.shape[-2:]) == tuple(size):
        return images
    return F.interpolate(images, size=size, mode="bilinear", align_corners=False)


class TorchOps:
    """``array_ops.ArrayOps`` on tensors, on whatever device they live on."""

    def zeros_like(self, array: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(array)

    def square(self, array: torch.Tensor) -> torch.Tensor:
        return array.square()

    def mean(self, array: torch.Tensor, axis: int | tuple[int, ...]) -> torch.Tensor:
        return array.mean(dim=axis)

    def sum(self, array: torch.Tensor, axis: int) -> torch.Tensor:
        return array.sum(dim=axis)

    def amax(self, array: torch.Tensor, axis: tuple[int, ...]) -> torch.Tensor:
        return array.amax(dim=axis)

    def matmul_into(
        self, left: torch.Tensor, right: torch.Tensor, out: torch.Tensor
    ) -> torch.Tensor:
        return torch.matmul(left, right, out=out)

    def maximum_into(self, best: torch.Tensor, values: torch.Tensor) -> None:
        torch.maximum(best, values, out=best)

    def empty(self, like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
        return torch.empty(shape, dtype=like.dtype, device=like.device)

    def stack(self, arrays: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.stack(list(arrays), dim=axis)

    def as_float32(self, array: torch.Tensor) -> torch.Tensor:
        return array.float()

    def clip01(self, array: torch.Tensor) -> torch.Tensor:
        return array.clamp(0.0, 1.0)

    def lower_median(self, array: torch.Tensor) -> torch.Tensor:
        flat = array.reshape(-1)  # kthvalue, unlike quantile, has no size limit
        return flat.kthvalue((flat.numel() + 1) // 2).values

    def keep_above(
        self, values: torch.Tensor, keys: torch.Tensor, cut: torch.Tensor
    ) -> torch.Tensor:
        return torch.where(keys > cut, values, torch.zeros_like(values))

    def average_pool(self, plane: torch.Tensor, factor: int) -> torch.Tensor:
        return F.avg_pool2d(plane[None, None], factor, ceil_mode=True)[0, 0]

    def gaussian_blur(self, images: torch.Tensor, kernel: int, sigma: float) -> torch.Tensor:
        batched = images.reshape(-1, 1, *images.shape[-2:]) if images.ndim != 4 else images
        blurred = kornia.filters.gaussian_blur2d(
            batched, (kernel, kernel), (sigma, sigma), border_type="reflect"
        )
        return blurred.reshape(images.shape)

    def upsample(self, images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
        if images.ndim == 2:
            return upsample(images[None, None], size)[0, 0]
        return upsample(images, size)

    def resize_with(self, images: torch.Tensor, rows: np.ndarray, cols: np.ndarray) -> torch.Tensor:
        left = torch.tensor(rows, device=images.device)  # the cached weights stay read-only
        right = torch.tensor(cols, device=images.device)
        return left @ images.float() @ right.T

    def concat(self, arrays: Sequence[torch.Tensor], axis: int) -> torch.Tensor:
        return torch.cat(list(arrays), dim=axis)

    def rot90(self, images: torch.Tensor, turns: int) -> torch.Tensor:
        return torch.rot90(images, turns, (-2, -1))

    def channels_last(self, cells: torch.Tensor) -> torch.Tensor:
        return cells.permute(0, 2, 3, 1)

    def to_host(self, array: torch.Tensor) -> np.ndarray:
        return array.float().cpu().numpy()

    def rgb_to_lab(self, images01: torch.Tensor) -> torch.Tensor:
        return kornia.color.rgb_to_lab(images01)

    def unfold_from_patches(self, tokens: torch.Tensor, cells: int, grid: int) -> torch.Tensor:
        return unfold_from_patches(tokens, cells, grid)


TORCH_OPS = TorchOps()
