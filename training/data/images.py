"""Decoding image files into the float tensors the model is trained on."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import torch

from padformer_edge.errors import UserError

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})


def is_image_file(path: Path) -> bool:
    """Whether ``path`` looks like an image by its suffix (hidden files never count)."""
    return (
        path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES and not path.name.startswith(".")
    )


def read_rgb(path: Path, size: int) -> torch.Tensor:
    """Float RGB in [0, 1], shape [3, size, size].

    Area interpolation when shrinking keeps thin defects (scratches, burrs) from aliasing
    away; cubic when enlarging. Grey and 16-bit files are accepted because industrial
    cameras write both.
    """
    image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise UserError(f"image {path} cannot be decoded; replace or remove the file.")
    scale = 65535.0 if image.dtype == np.uint16 else 255.0
    if image.ndim == 2:
        image = cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
    elif image.shape[2] == 4:
        image = cv2.cvtColor(image, cv2.COLOR_BGRA2RGB)
    else:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    height, width = image.shape[:2]
    if (height, width) != (size, size):
        shrink = height * width > size * size
        image = cv2.resize(
            image, (size, size), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_CUBIC
        )
    array = np.clip(image.astype(np.float32) / scale, 0.0, 1.0)
    return torch.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))
