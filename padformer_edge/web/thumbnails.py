"""Small JPEG copies of camera images and heatmaps for the live cards and history rows.

A card used to load the camera's full file: a 12-megapixel TIFF cost the server most of
a second of CPU (decoded, then encoded again as PNG) and the browser tens of megabytes,
on the PC that also runs the detector, for a picture shown a few hundred pixels wide.
A thumbnail is the picture scaled down to ``EDGE`` pixels on its longer side (area
averaging) and encoded as JPEG at ``QUALITY``; the first request for a file pays for the
decode, and the result is kept in memory, so every later card showing it is a lookup.

The cache (``file_cache.FileCache``) is keyed by the file's resolved path, modification
time and size (a file replaced under the same name is made again) and bounded by
``MAX_BYTES`` in all, the least recently shown thumbnail leaving first. The detail page
still shows the full image (``media``); only the cards and history rows use these.
"""

from __future__ import annotations

import cv2
import numpy as np

from padformer_edge.web.file_cache import FileCache

EDGE = 320
QUALITY = 80
MAX_BYTES = 32 * 1024 * 1024  # ~1,500 thumbnails of ~20 KB: several screens of history


def make_thumbnail(data: bytes, edge: int = EDGE, quality: int = QUALITY) -> bytes | None:
    """``data`` (an encoded image) scaled to fit ``edge`` pixels, as JPEG; ``None`` if it
    is no image OpenCV can decode."""
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        return None
    height, width = image.shape[:2]
    scale = edge / max(height, width)
    if scale < 1:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        image = cv2.resize(image, size, interpolation=cv2.INTER_AREA)
    ok, jpeg = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, quality])
    return jpeg.tobytes() if ok else None


class Thumbnails(FileCache):
    """Thumbnails by file (``FileCache``), ``MAX_BYTES`` in all unless told."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(make_thumbnail, max_bytes)
