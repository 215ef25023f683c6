"""Camera images and heatmaps, served only when the store recorded them under a root.

A URL names an inspection id and which of its two pictures is wanted; the file path
comes from the database row, never from the URL. Even a recorded path is refused unless,
with every symbolic link resolved, it lies under one of the configured roots (the camera
folders and the heatmap folder) and has an image suffix: a row cannot make the server
read ``/etc/passwd`` or hand a browser an HTML file to run. A relative path is one the
store recorded under the state folder (``store.locations.stored_path``) and is taken
there before the same check.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from padformer_edge.store.locations import resolve_stored

Kind = Literal["image", "heatmap"]
# What a browser shows as it is; TIFF is converted to PNG, anything else is refused.
CONTENT_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".webp": "image/webp",
    ".bmp": "image/bmp",
}
CONVERTED = (".tif", ".tiff")
MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class Picture:
    content_type: str
    data: bytes


class MediaRoots:
    """The folders whose files may be served, resolved once at start."""

    def __init__(self, roots: list[Path]) -> None:
        self.roots = [Path(r).expanduser().resolve() for r in roots]

    def allowed(self, recorded: str | None) -> Path | None:
        """The resolved file if ``recorded`` is an image under a root, else ``None``."""
        if not recorded:
            return None
        path = resolve_stored(recorded)  # a relative path lies under the state folder
        try:
            real = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return None
        if not any(real.is_relative_to(root) for root in self.roots):
            return None
        if real.suffix.lower() not in (*CONTENT_TYPES, *CONVERTED) or not real.is_file():
            return None
        return real

    @staticmethod
    def read_file(real: Path) -> bytes | None:
        """The bytes of an allowed file, or ``None`` when it is gone or over ``MAX_BYTES``."""
        try:
            if real.stat().st_size > MAX_BYTES:
                return None
            return real.read_bytes()
        except OSError:
            return None

    def read(self, recorded: str | None) -> Picture | None:
        """The bytes to send and their type, or ``None`` if the file may not be served."""
        real = self.allowed(recorded)
        if real is None:
            return None
        data = self.read_file(real)
        if data is None:
            return None
        suffix = real.suffix.lower()
        if suffix in CONTENT_TYPES:
            return Picture(CONTENT_TYPES[suffix], data)
        image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
        if image is None:
            return None
        ok, png = cv2.imencode(".png", image)
        return Picture("image/png", png.tobytes()) if ok else None
