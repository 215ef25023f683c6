"""Decoding image files and fitting image arrays to the model's square input.

Files are decoded from their bytes (``padformer_edge.images.decode``, the decoder the daemon
uses too) rather than from a path, so that names with non-ASCII characters (common on
shared factory drives) decode like any other and a decompression bomb is refused by its
header.
Everything past this module works on RGB ``uint8`` arrays of shape ``H x W x 3``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from padformer_edge.detect.readout_constants import MIN_SIDE
from padformer_edge.errors import UserError
from padformer_edge.images.decode import (
    DEFAULT_MAX_PIXELS,
    IMAGE_SUFFIXES,
    DecodeError,
    decode_image,
)

if TYPE_CHECKING:  # torch is imported where tensors are made: the line install has none
    import numpy as np  # and numpy where arrays are read: a daemon that refuses needs none
    import torch


class ImageReadError(UserError):
    """An image file that is missing, unreadable or not a decodable picture."""


def read_image(path: str | Path, max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Decode ``path`` into an RGB ``uint8`` array of shape ``H x W x 3``."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as err:
        raise ImageReadError(f"image {path} does not exist; check the path.") from err
    except OSError as err:
        raise ImageReadError(
            f"image {path} cannot be read ({err.strerror}); fix its permissions or copy it again."
        ) from err
    try:
        return decode_image(data, suffix=path.suffix, max_pixels=max_pixels)
    except DecodeError as err:
        raise ImageReadError(
            f"image {path} is not a decodable picture ({err}); replace it with a "
            "complete PNG, JPEG, BMP, TIFF or WebP file."
        ) from None


def list_images(folder: str | Path) -> list[Path]:
    """The image files directly inside ``folder``, sorted by name for a stable order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(
            f"reference folder {folder} does not exist; pass a folder of good "
            "images of the product."
        )
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)


def check_rgb_array(image: np.ndarray, what: str, min_side: int = 1) -> None:
    """Reject arrays that are not ``H x W x 3`` ``uint8`` with sides of ``min_side`` or more."""
    import numpy as np

    if (
        not isinstance(image, np.ndarray)
        or image.dtype != np.uint8
        or image.ndim != 3
        or image.shape[2] != 3
    ):
        shape = getattr(image, "shape", None)
        dtype = getattr(image, "dtype", type(image).__name__)
        raise UserError(
            f"{what} must be an RGB uint8 array of shape HxWx3, not {dtype} of "
            f"shape {shape}; decode it with read_image."
        )
    if min(image.shape[:2]) < min_side:
        raise UserError(
            f"{what} is only {image.shape[1]}x{image.shape[0]} pixels; detection needs at least "
            f"{min_side} pixels on each side."
        )


def to_unit_tensor(image: np.ndarray, device: torch.device | str) -> torch.Tensor:
    """An ``H x W x 3`` ``uint8`` array as a ``[3, H, W]`` float tensor in ``[0, 1]``.

    For a CUDA device the bytes go through page-locked (pinned) host memory and are
    copied without blocking: the GPU's copy engine reads pinned pages directly, and the
    host goes on to the next image while it does (torch keeps the pinned block until the
    copy is done). The uint8 image crosses, not its float version: a quarter of the bytes.
    On the CPU nothing is copied: the array is used where it lies.
    """
    import numpy as np
    import torch

    target = torch.device(device)
    host = torch.from_numpy(np.ascontiguousarray(image))
    tensor = host.pin_memory().to(target, non_blocking=True) if target.type == "cuda" else host
    return tensor.permute(2, 0, 1).float().div_(255.0)


def resize_square(images: torch.Tensor, size: int) -> torch.Tensor:
    """Resize ``[B, 3, H, W]`` to ``size x size``, anti-aliased when shrinking.

    Any aspect ratio is squeezed rather than cropped or padded: cropping would leave parts
    of the product uninspected and padding would spend patches on empty borders. Queries
    and references go through the same squeeze, so the model compares like with like.
    """
    import torch.nn.functional as F

    if images.shape[-2:] == (size, size):
        return images
    return F.interpolate(
        images, size=(size, size), mode="bilinear", align_corners=False, antialias=True
    ).clamp_(0.0, 1.0)


def check_references(references: Sequence[np.ndarray]) -> None:
    """Refuse a reference set a detector cannot use: none, an image that is not RGB
    ``uint8``, or images of several sizes (references come from one camera setting)."""
    if len(references) == 0:
        raise UserError(
            "no reference images were given; pass at least one good image of the product."
        )
    for index, image in enumerate(references):
        check_rgb_array(image, f"reference {index}")
    sizes = {image.shape[:2] for image in references}
    if len(sizes) > 1:
        raise UserError(
            f"reference images differ in size ({sorted(sizes)}); use "
            "references taken by one camera setting."
        )


def check_queries(images: Sequence[np.ndarray]) -> None:
    """Refuse a query a detector cannot score: not RGB ``uint8``, or a side shorter than
    the readout's blur needs (``MIN_SIDE``); every detector, torch or line, checks alike."""
    for index, image in enumerate(images):
        check_rgb_array(image, f"query {index}", MIN_SIDE)
