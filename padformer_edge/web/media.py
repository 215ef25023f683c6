"""Camera images and heatmaps, served only when the store recorded them under a root.

A URL names an inspection id and which of its two pictures is wanted; the file path
comes from the database row, never from the URL. Even a recorded path is refused unless,
with every symbolic link resolved, it lies under one of the configured roots (the camera
folders and the heatmap folder) and has an image suffix: a row cannot make the server
read ``/etc/passwd`` or hand a browser an HTML file to run. A relative path is one the
store recorded under the state folder (``store.locations.stored_path``) and is taken
there before the same check.

A TIFF, which browsers do not show, is sent as PNG: converted once per file and kept
(``file_cache.FileCache``, ``CONVERTED_MAX_BYTES`` in all), so a detail page opened
again, or by four people at once, costs a lookup rather than a second of CPU each
(issue 51's audit: 0.9 s per request for a 12-megapixel TIFF).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import cv2
import numpy as np

from padformer_edge.store.locations import resolve_stored
from padformer_edge.web.file_cache import FileCache

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
CONVERTED_MAX_BYTES = 128 * 1024 * 1024  # ~9 PNGs of a 12-megapixel TIFF (~14 MB each)


def to_png(data: bytes) -> bytes | None:
    """``data`` (an encoded image OpenCV reads, such as a TIFF) as PNG, its depth and
    channels kept; ``None`` if it is no image."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None:
        return None
    ok, png = cv2.imencode(".png", image)
    return png.tobytes() if ok else None


def conversions() -> FileCache:
    """The cache of converted pictures one server keeps."""
    return FileCache(to_png, CONVERTED_MAX_BYTES)


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
        # A relative path lies under the state folder; an absolute one is itself, and is
        # stat'ed as the text it is: making a ``Path`` of it took longer than the stat.
        where = recorded if os.path.isabs(recorded) else resolve_stored(recorded)
        try:
            # One stat first: a file that is not here (another line's, or removed) is
            # refused without resolving each folder of its path in turn, what a history
            # page of a plant's lines asked fifty times.
            os.stat(where)
            real = Path(where).resolve(strict=True)
        except (OSError, RuntimeError, ValueError):
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

    def read(self, recorded: str | None, converted: FileCache | None = None) -> Picture | None:
        """The bytes to send and their type, or ``None`` if the file may not be served;
        a picture a browser cannot show comes from ``converted`` (made there once), or
        is converted on the spot without one."""
        real = self.allowed(recorded)
        if real is None:
            return None
        suffix = real.suffix.lower()
        if suffix in CONTENT_TYPES:
            data = self.read_file(real)
            return None if data is None else Picture(CONTENT_TYPES[suffix], data)
        if converted is not None:
            png = converted.get(real, self.read_file)
        else:
            data = self.read_file(real)
            png = None if data is None else to_png(data)
        return None if png is None else Picture("image/png", png)
