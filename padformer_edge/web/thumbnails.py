"""Small JPEG copies of camera images and heatmaps for the live cards and history rows.

A card used to load the camera's full file: a 12-megapixel TIFF cost the server most of
a second of CPU (decoded, then encoded again as PNG) and the browser tens of megabytes,
on the PC that also runs the detector, for a picture shown a few hundred pixels wide.
A thumbnail is the picture scaled down to ``EDGE`` pixels on its longer side (area
averaging) and encoded as JPEG at ``QUALITY``; the first request for a file pays for the
decode, and the result is kept in memory, so every later card showing it is a lookup.

The cache is keyed by the file's resolved path, modification time and size (a file
replaced under the same name is made again) and bounded by ``MAX_BYTES`` in all, the
least recently shown thumbnail leaving first. The detail page still shows the full
image (``media``); only the cards and history rows use these.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np

EDGE = 320
QUALITY = 80
MAX_BYTES = 32 * 1024 * 1024  # ~1,500 thumbnails of ~20 KB: several screens of history
Key = tuple[str, int, int]


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


class Thumbnails:
    """Thumbnails by file, least recently used dropped past ``max_bytes``; thread-safe."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._kept: OrderedDict[Key, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.made = 0  # thumbnails made (cache misses), for tests and the benchmark

    @property
    def size_bytes(self) -> int:
        with self._lock:
            return self._bytes

    def get(self, real: Path, read: Callable[[Path], bytes | None]) -> bytes | None:
        """The thumbnail of the file ``real`` (already checked by ``media``), made from
        ``read(real)``'s bytes on a miss; ``None`` when the file is gone or no image."""
        try:
            info = real.stat()
        except OSError:
            return None
        key = (str(real), info.st_mtime_ns, info.st_size)
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None:
                self._kept.move_to_end(key)
                return kept
        data = read(real)
        thumb = make_thumbnail(data) if data is not None else None
        if thumb is None:
            return None
        with self._lock:
            self.made += 1
            if key not in self._kept and len(thumb) <= self.max_bytes:
                self._kept[key] = thumb
                self._bytes += len(thumb)
                while self._bytes > self.max_bytes:
                    _, old = self._kept.popitem(last=False)
                    self._bytes -= len(old)
        return thumb
