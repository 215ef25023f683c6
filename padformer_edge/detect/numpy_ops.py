"""The image arithmetic of detection in numpy, for a line PC that has no torch, and the
primitives ``readout`` composes when it reads numpy arrays (``tensor_ops`` in torch).

Each function mirrors one torch or kornia call of the torch detector (named in its
docstring) with the same formula and float32 arithmetic, so the two differ only by the
order float32 sums are taken in; ``tests/deploy/test_line_parity.py`` holds them to that.
Resizes are written as products with small weight matrices: a camera frame then costs
two matrix products per channel rather than a gather per pixel.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import cv2
import numpy as np

F32 = np.float32
WEIGHT_SIZES = 16
"""Resize weight matrices kept per (source, target) pair: a line meets a handful of sizes
(the camera's frame, the model's side and its magnifications, the map's), and building a
matrix row by row in Python cost more than the resize itself."""


def _read_only(weights: np.ndarray) -> np.ndarray:
    weights.flags.writeable = False  # shared by every later call through the cache
    return weights


def unit_image(image: np.ndarray) -> np.ndarray:
    """``H x W x 3`` ``uint8`` -> ``[1, 3, H, W]`` float32 in [0, 1] (``to_unit_tensor``)."""
    chw = np.ascontiguousarray(image.transpose(2, 0, 1)).astype(F32)
    return (chw / F32(255.0))[None]


@lru_cache(maxsize=WEIGHT_SIZES)
def antialias_weights(source: int, target: int) -> np.ndarray:
    """``[target, source]`` weights of torch's anti-aliased bilinear resize along one axis
    (``F.interpolate(..., antialias=True)``): a triangle filter widened by the shrink
    factor, each row normalised to sum 1 (the PIL scheme torch follows)."""
    scale = source / target
    support = max(scale, 1.0)
    inverse = 1.0 / scale if scale >= 1.0 else 1.0
    weights = np.zeros((target, source), dtype=np.float64)
    for index in range(target):
        center = scale * (index + 0.5)
        low = max(int(center - support + 0.5), 0)
        high = min(int(center + support + 0.5), source)
        taps = np.arange(low, high)
        row = np.clip(1.0 - np.abs((taps - center + 0.5) * inverse), 0.0, None)
        total = row.sum()
        weights[index, low:high] = row / total if total > 0 else row
    return _read_only(weights.astype(F32))


@lru_cache(maxsize=WEIGHT_SIZES)
def bilinear_weights(source: int, target: int) -> np.ndarray:
    """``[target, source]`` weights of a plain bilinear resize along one axis
    (``F.interpolate(..., mode="bilinear", align_corners=False)``)."""
    scale = source / target
    position = np.maximum((np.arange(target) + 0.5) * scale - 0.5, 0.0)
    low = np.minimum(position.astype(np.int64), source - 1)
    high = np.minimum(low + 1, source - 1)
    upper = (position - low).astype(F32)
    weights = np.zeros((target, source), dtype=F32)
    rows = np.arange(target)
    weights[rows, low] += F32(1.0) - upper
    weights[rows, high] += upper
    return _read_only(weights)


@lru_cache(maxsize=WEIGHT_SIZES)
def pooled_weights(source: int, target: int, factor: int) -> np.ndarray:
    """``[ceil(target / factor), source]`` weights of a bilinear resize from ``source`` to
    ``target`` (``bilinear_weights``) followed by an average over blocks of ``factor``
    (partial blocks at the far edge over what they hold, ``average_pool``), as one matrix:
    a map read at its cells' size lands on the shrunk grid of a wide blur
    (``readout.smooth``) without ever being drawn at the frame's size."""
    full = bilinear_weights(source, target).astype(np.float64)
    starts = np.arange(0, target, factor)
    sums = np.add.reduceat(full, starts, axis=0)
    counts = np.minimum(starts + factor, target) - starts
    return _read_only((sums / counts[:, None]).astype(F32))


def _resize(images: np.ndarray, size: tuple[int, int], kind) -> np.ndarray:
    height, width = images.shape[-2:]
    if (height, width) == tuple(size):
        return images
    rows = kind(height, size[0])
    cols = kind(width, size[1])
    return np.matmul(np.matmul(rows, images), cols.T)


def resize_square(images: np.ndarray, size: int) -> np.ndarray:
    """``[B, 3, H, W]`` in [0, 1] squeezed to ``size x size`` (``images.resize_square``)."""
    if images.shape[-2:] == (size, size):
        return images
    return np.clip(_resize(images, (size, size), antialias_weights), 0.0, 1.0)


def upsample(images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``[..., h, w]`` to ``size`` bilinearly (``scoring.upsample``)."""
    return _resize(images, size, bilinear_weights)


def gaussian_kernel(size: int, sigma: float) -> np.ndarray:
    """kornia's normalised 1-D Gaussian of odd ``size`` taps (``filters.gaussian``)."""
    taps = np.arange(size, dtype=F32) - F32(size // 2)
    gauss = np.exp(-(taps * taps) / F32(2.0 * F32(sigma) ** 2))
    return (gauss / gauss.sum()).astype(F32)


def gaussian_blur(images: np.ndarray, size: int, sigma: float) -> np.ndarray:
    """``[..., H, W]`` blurred with reflect borders (``kornia.filters.gaussian_blur2d``)."""
    kernel = gaussian_kernel(size, sigma)
    flat = np.ascontiguousarray(images, dtype=F32).reshape(-1, *images.shape[-2:])
    out = np.empty_like(flat)
    for index, plane in enumerate(flat):
        out[index] = cv2.sepFilter2D(
            plane, cv2.CV_32F, kernel, kernel, borderType=cv2.BORDER_REFLECT_101
        )
    return out.reshape(images.shape)


def average_pool(plane: np.ndarray, factor: int) -> np.ndarray:
    """``[H, W]`` averaged over ``factor x factor`` blocks, partial blocks at the far edges
    averaged over the pixels they hold (``F.avg_pool2d(..., ceil_mode=True)``)."""
    height, width = plane.shape
    rows, cols = -(-height // factor), -(-width // factor)
    padded = np.zeros((rows * factor, cols * factor), dtype=F32)
    padded[:height, :width] = plane
    counts = np.zeros_like(padded)
    counts[:height, :width] = 1.0
    sums = padded.reshape(rows, factor, cols, factor).sum(axis=(1, 3))
    return sums / counts.reshape(rows, factor, cols, factor).sum(axis=(1, 3))


def rgb_to_lab(images01: np.ndarray) -> np.ndarray:
    """``[..., 3, H, W]`` sRGB in [0, 1] as CIELAB, D65 (``kornia.color.rgb_to_lab``)."""
    image = images01.astype(F32, copy=False)
    linear = np.where(
        image > F32(0.04045),
        np.power(np.clip(image + F32(0.055), 0.0, None) / F32(1.055), F32(2.4)),
        image / F32(12.92),
    ).astype(F32)
    matrix = np.array(
        [
            [0.412453, 0.357580, 0.180423],
            [0.212671, 0.715160, 0.072169],
            [0.019334, 0.119193, 0.950227],
        ],
        dtype=F32,
    )
    xyz = np.einsum("oi,...ihw->...ohw", matrix, linear)
    white = np.array([0.95047, 1.0, 1.08883], dtype=F32)[:, None, None]
    xyz = xyz / white
    threshold = F32(0.008856)
    power = np.power(np.clip(xyz, threshold, None), F32(1.0 / 3.0))
    linear_part = F32(7.787) * xyz + F32(4.0 / 29.0)
    xyz = np.where(xyz > threshold, power, linear_part).astype(F32)
    x, y, z = xyz[..., 0, :, :], xyz[..., 1, :, :], xyz[..., 2, :, :]
    return np.stack(
        [F32(116.0) * y - F32(16.0), F32(500.0) * (x - y), F32(200.0) * (y - z)], axis=-3
    )


def pixel_shuffle(maps: np.ndarray, factor: int) -> np.ndarray:
    """``[B, C * r * r, H, W]`` -> ``[B, C, H * r, W * r]`` (``F.pixel_shuffle``)."""
    batch, channels, height, width = maps.shape
    out = channels // (factor * factor)
    shaped = maps.reshape(batch, out, factor, factor, height, width)
    return shaped.transpose(0, 1, 4, 2, 5, 3).reshape(batch, out, height * factor, width * factor)


def unfold_from_patches(tokens: np.ndarray, cells: int, grid: int) -> np.ndarray:
    """``[B, g * g, cells * cells * C]`` -> ``[B, C, g * cells, g * cells]``
    (``model.backbone.unfold_from_patches``)."""
    maps = tokens.transpose(0, 2, 1).reshape(tokens.shape[0], tokens.shape[2], grid, grid)
    return pixel_shuffle(maps, cells) if cells > 1 else maps


class NumpyOps:
    """``array_ops.ArrayOps`` on float32 numpy arrays, for the torch-free line."""

    def zeros_like(self, array: np.ndarray) -> np.ndarray:
        return np.zeros_like(array)

    def square(self, array: np.ndarray) -> np.ndarray:
        return np.square(array)

    def mean(self, array: np.ndarray, axis: int | tuple[int, ...]) -> np.ndarray:
        return array.mean(axis=axis)

    def sum(self, array: np.ndarray, axis: int) -> np.ndarray:
        return array.sum(axis=axis)

    def amax(self, array: np.ndarray, axis: tuple[int, ...]) -> np.ndarray:
        return array.max(axis=axis)

    def matmul_into(self, left: np.ndarray, right: np.ndarray, out: np.ndarray) -> np.ndarray:
        return np.matmul(left, right, out=out)

    def maximum_into(self, best: np.ndarray, values: np.ndarray) -> None:
        np.maximum(best, values, out=best)

    def empty(self, like: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        return np.empty(shape, dtype=like.dtype)

    def stack(self, arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
        return np.stack(arrays, axis=axis)

    def as_float32(self, array: np.ndarray) -> np.ndarray:
        return array.astype(F32, copy=False)

    def clip01(self, array: np.ndarray) -> np.ndarray:
        return np.clip(array, 0.0, 1.0)

    def lower_median(self, array: np.ndarray) -> np.ndarray:
        flat = array.reshape(-1)
        kth = (flat.size + 1) // 2 - 1
        return np.partition(flat, kth)[kth]

    def keep_above(self, values: np.ndarray, keys: np.ndarray, cut: np.ndarray) -> np.ndarray:
        return np.where(keys > cut, values, F32(0.0)).astype(F32)

    def average_pool(self, plane: np.ndarray, factor: int) -> np.ndarray:
        return average_pool(plane, factor)

    def gaussian_blur(self, images: np.ndarray, kernel: int, sigma: float) -> np.ndarray:
        return gaussian_blur(images, kernel, sigma)

    def upsample(self, images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
        return upsample(images, size)

    def resize_with(self, images: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return np.matmul(np.matmul(rows, images), cols.T)

    def concat(self, arrays: Sequence[np.ndarray], axis: int) -> np.ndarray:
        return np.concatenate(arrays, axis=axis)

    def rot90(self, images: np.ndarray, turns: int) -> np.ndarray:
        return np.ascontiguousarray(np.rot90(images, turns, axes=(-2, -1)))

    def channels_last(self, cells: np.ndarray) -> np.ndarray:
        return cells.transpose(0, 2, 3, 1)

    def to_host(self, array: np.ndarray) -> np.ndarray:
        return array.astype(F32, copy=False)

    def rgb_to_lab(self, images01: np.ndarray) -> np.ndarray:
        return rgb_to_lab(images01)

    def unfold_from_patches(self, tokens: np.ndarray, cells: int, grid: int) -> np.ndarray:
        return unfold_from_patches(tokens, cells, grid)


NUMPY_OPS = NumpyOps()
