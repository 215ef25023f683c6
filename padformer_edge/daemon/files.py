"""What a camera file must be before it is decoded, and the checks that refuse it.

Two moments use these checks. Intake asks ``looks_complete`` while a file may still be
growing: image formats end with a fixed trailer (JPEG's EOI marker, PNG's IEND chunk),
so a file that lacks it is either still being written or truncated. The worker asks
``read_checked`` and ``decode`` just before inspection, once, on the bytes it then inspects,
so a file swapped between discovery and inspection cannot slip through.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from pathlib import Path

import cv2
import numpy as np

from padformer_edge.detect.images import IMAGE_SUFFIXES

JPEG_SUFFIXES = (".jpg", ".jpeg")
PNG_TRAILER = b"IEND\xaeB`\x82"  # the IEND chunk's type and its fixed CRC
TRAILER_WINDOW = 64  # some encoders pad a few bytes after the JPEG end marker


class Refused(Exception):
    """A file that will never become inspectable; ``str`` is the reason stored on its row."""


def ignored(name: str, patterns: list[str]) -> bool:
    """Temporary names of write-then-rename cameras (``x.png.part``) are never queued."""
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def within(path: Path, root: Path) -> bool:
    """True when ``path`` resolves (symlinks followed) inside ``root``."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def has_trailer(suffix: str, tail: bytes) -> bool:
    """Whether the last bytes of a JPEG or PNG end the format properly; other formats
    have no trailer to check and pass."""
    suffix = suffix.lower()
    if suffix in JPEG_SUFFIXES:
        return b"\xff\xd9" in tail[-TRAILER_WINDOW:]
    if suffix == ".png":
        return tail.endswith(PNG_TRAILER)
    return True


def read_tail(path: Path, size: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(max(0, size - TRAILER_WINDOW))
        return handle.read(TRAILER_WINDOW)


def looks_complete(path: Path, size: int) -> bool:
    """Intake's question: may this file be queued now, or should it settle longer?"""
    if size == 0:
        return False
    try:
        return has_trailer(path.suffix, read_tail(path, size))
    except OSError:
        return False


def fingerprint(path: Path, max_bytes: int) -> tuple[str, int]:
    """(sha256, size) without following symlinks; oversized files and links get a
    descriptive stand-in digest so they can still be recorded once, without reading
    gigabytes or the link's target."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        return _digest(f"symlink:{os.readlink(path)}".encode()), info.st_size
    if info.st_size > max_bytes:
        return _digest(f"oversized:{info.st_size}:{info.st_mtime_ns}".encode()), info.st_size
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest(), info.st_size


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_checked(path: Path, root: Path, max_bytes: int, sha256: str) -> bytes:
    """The file's bytes, or ``Refused`` saying why it can never be inspected."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise Refused("the file disappeared before it was inspected") from None
    if stat.S_ISLNK(info.st_mode):
        raise Refused("symbolic links are not inspected; cameras must write real files")
    if not within(path, root):
        raise Refused(f"the path resolves outside the watched folder {root}")
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise Refused(
            f"not an image file (suffix '{path.suffix}'); cameras must write "
            f"{', '.join(IMAGE_SUFFIXES)}"
        )
    if not stat.S_ISREG(info.st_mode):
        raise Refused("not a regular file")
    if info.st_size == 0:
        raise Refused("zero-byte file")
    if info.st_size > max_bytes:
        raise Refused(f"file of {info.st_size} bytes is larger than the {max_bytes}-byte limit")
    data = path.read_bytes()
    if _digest(data) != sha256:
        raise Refused(
            "the file changed after it was discovered; the new content is queued as its own row"
        )
    if not has_trailer(path.suffix, data[-TRAILER_WINDOW:]):
        raise Refused("truncated image (no end-of-image trailer)")
    return data


def decode(data: bytes) -> np.ndarray:
    """RGB ``uint8`` pixels of an encoded image, or ``Refused`` for a corrupt one."""
    image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise Refused("corrupt image: OpenCV could not decode it")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
