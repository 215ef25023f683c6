"""The primitives one array kind brings to the scoring arithmetic, and which kind an
array is: torch tensors (``tensor_ops``, on the detector's device) or numpy arrays
(``numpy_ops``, on a torch-free line).

The scoring arithmetic (``readout``, the metrics' error maps, the fused mix) is written
once against ``ArrayOps`` and runs on either kind, so the torch detectors and the line
detectors share one copy of it and differ by float32 rounding only. No torch is imported
here: a tensor's primitives are loaded only when a tensor is handed in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

Array = Any
"""A torch tensor or a numpy array: the arithmetic takes either and answers in kind."""


class ArrayOps(Protocol):
    """What differs between the kinds: calls with other names or other libraries behind
    them. Plain arithmetic (``+``, ``*``, indexing, ``reshape``, ``sum(axis)``) is
    written on the arrays themselves."""

    def zeros_like(self, array: Array) -> Array: ...

    def square(self, array: Array) -> Array: ...

    def mean(self, array: Array, axis: int | tuple[int, ...]) -> Array: ...

    def sum(self, array: Array, axis: int) -> Array: ...

    def amax(self, array: Array, axis: tuple[int, ...]) -> Array: ...

    def matmul_into(self, left: Array, right: Array, out: Array) -> Array:
        """``left @ right`` written into ``out`` (a reused buffer), returned."""
        ...

    def maximum_into(self, best: Array, values: Array) -> None:
        """``best`` (a view) raised in place to ``values`` where they are larger."""
        ...

    def empty(self, like: Array, shape: tuple[int, ...]) -> Array:
        """An uninitialised float array of ``shape``, of ``like``'s dtype and device."""
        ...

    def stack(self, arrays: Sequence[Array], axis: int) -> Array: ...

    def as_float32(self, array: Array) -> Array: ...

    def clip01(self, array: Array) -> Array:
        """``array`` clipped to [0, 1]."""
        ...

    def lower_median(self, array: Array) -> Array:
        """The ``(n + 1) // 2``-th smallest value, as a 0-d array."""
        ...

    def keep_above(self, values: Array, keys: Array, cut: Array) -> Array:
        """``values`` where ``keys`` is strictly above ``cut``, zero elsewhere."""
        ...

    def average_pool(self, plane: Array, factor: int) -> Array:
        """``[H, W]`` averaged over ``factor`` blocks, partial edge blocks over what they hold."""
        ...

    def gaussian_blur(self, images: Array, kernel: int, sigma: float) -> Array:
        """``[..., H, W]`` blurred by a ``kernel``-tap Gaussian with reflected borders."""
        ...

    def upsample(self, images: Array, size: tuple[int, int]) -> Array:
        """``[..., h, w]`` resized bilinearly (half-pixel centres) to ``size``."""
        ...

    def resize_with(self, images: Array, rows: np.ndarray, cols: np.ndarray) -> Array:
        """``[..., h, w]`` -> ``rows @ images @ cols.T``: a resize given as its float32
        weights ``[H, h]`` and ``[W, w]`` (``numpy_ops.pooled_weights``)."""
        ...

    def concat(self, arrays: Sequence[Array], axis: int) -> Array: ...

    def rot90(self, images: Array, turns: int) -> Array:
        """``[..., H, W]`` turned by ``turns`` quarter turns, as a contiguous array."""
        ...

    def channels_last(self, cells: Array) -> Array:
        """``[B, C, h, w]`` -> ``[B, h, w, C]``."""
        ...

    def to_host(self, array: Array) -> np.ndarray:
        """``array`` as a float32 numpy array on the host."""
        ...

    def rgb_to_lab(self, images01: Array) -> Array:
        """``[..., 3, H, W]`` sRGB in [0, 1] as CIELAB under D65."""
        ...

    def unfold_from_patches(self, tokens: Array, cells: int, grid: int) -> Array:
        """``[B, g * g, cells * cells * C]`` -> ``[B, C, g * cells, g * cells]``."""
        ...


QUARTER_TURNS = (1, 2, 3)
"""The quarter turns a turned bank adds to the upright references (``turned_bank``)."""


def flat_cells(cells: Array) -> Array:
    """``[B, C, h, w]`` cells as ``[B * h * w, C]`` rows, image-major: a bank to search."""
    return ops_of(cells).channels_last(cells).reshape(-1, cells.shape[1])


def turned_bank(
    cells_of: Callable[[Array], Array],
    squares: Array,
    turns: Sequence[int],
    upright: Array | None = None,
) -> tuple[Array, int]:
    """``([R, C] rows, upright count)``: the cells ``cells_of`` makes of ``[N, 3, S, S]``
    reference squares, upright first, then of the squares turned by each of ``turns``
    quarter turns (a part seen from any side is seen at any roll), so one similarity
    product serves a search that matches turned references and one that does not. Every
    method that matches turned references builds its bank here, on either kind.
    ``upright``: the upright squares' cells where the caller already made them."""
    ops = ops_of(squares)
    rows = flat_cells(cells_of(squares) if upright is None else upright)
    turned = [flat_cells(cells_of(ops.rot90(squares, turn))) for turn in turns]
    return ops.concat([rows, *turned], 0), int(rows.shape[0])


def ops_of(array: Array) -> ArrayOps:
    """The primitives of ``array``'s kind: numpy's, or torch's only when handed a tensor
    (so a torch-free line never imports torch)."""
    if isinstance(array, np.ndarray | np.generic):
        from padformer_edge.detect.numpy_ops import NUMPY_OPS

        return NUMPY_OPS
    from padformer_edge.detect.tensor_ops import TORCH_OPS

    return TORCH_OPS
