"""What a camera file must be before it is decoded, and the checks that refuse it.

Two moments use these checks. Intake asks ``looks_complete`` while a file may still be
growing: image formats end with a fixed trailer (JPEG's EOI marker, PNG's IEND chunk),
so a file that lacks it is either still being written or truncated. The worker asks
``read_checked`` and ``decode`` just before inspection, once, on the bytes it then
inspects, so a file swapped between discovery and inspection cannot slip through.

Special entries (a FIFO, a socket, a device) are fingerprinted from their metadata and
never opened: opening a FIFO blocks until a writer appears, which would stall intake.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

from padformer_edge.images.decode import (
    DEFAULT_MAX_PIXELS,
    HEAD_BYTES,
    IMAGE_SUFFIXES,
    TRAILER_WINDOW,
    DecodeError,
    decode_image,
    has_trailer,
    signature_reason,
    sniff,
)

if TYPE_CHECKING:  # the arrays come from the decoder; a daemon that refuses loads no numpy
    import numpy as np


class Refused(Exception):
    """A file that will never become inspectable; ``str`` is the reason stored on its row."""


def ignored(name: str, patterns: list[str]) -> bool:
    """Temporary names of write-then-rename cameras (``x.png.part``) are never queued."""
    return any(fnmatch.fnmatch(name, pattern) for pattern in patterns)


def within(
    path: Path, root: Path, real_root: str | None = None, real_folder: str | None = None
) -> bool:
    """True when ``path`` resolves (symlinks followed) inside ``root``; ``real_root`` is
    ``root`` resolved already (the worker resolves each camera's once per batch rather
    than once per file: resolving walks every folder of the path), and ``real_folder``
    the path's folder resolved, for a path that is itself no link (``read_checked``
    knows it from the file's ``lstat``)."""
    real = os.path.join(real_folder, path.name) if real_folder else os.path.realpath(path)
    top = real_root or os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def read_ends(path: Path, size: int) -> tuple[bytes, bytes]:
    """The first and the last bytes of a file: its signature and its trailer."""
    with open(path, "rb") as handle:
        head = handle.read(HEAD_BYTES)
        handle.seek(max(0, size - TRAILER_WINDOW))
        return head, handle.read(TRAILER_WINDOW)


def looks_complete(path: Path, size: int) -> bool:
    """Intake's question: may this file be queued now, or should it settle longer?"""
    if size == 0:
        return False
    try:
        head, tail = read_ends(path, size)
    except OSError:
        return False
    return has_trailer(sniff(head), tail)


def fingerprint(path: Path, max_bytes: int, info: os.stat_result | None = None) -> tuple[str, int]:
    """(sha256, size) without following symlinks; oversized files, links and special
    entries get a descriptive stand-in digest so they can still be recorded once, without
    reading gigabytes, the link's target, or a FIFO that would block. ``info``: the
    path's ``lstat`` when the caller took it already (intake's, for the row it queues)."""
    info = os.lstat(path) if info is None else info
    if stat.S_ISLNK(info.st_mode):
        return _digest(f"symlink:{os.fsencode(os.readlink(path))!r}".encode()), info.st_size
    if not stat.S_ISREG(info.st_mode):
        return _digest(f"special:{info.st_mode}:{info.st_ino}".encode()), info.st_size
    if info.st_size > max_bytes:
        return _digest(f"oversized:{info.st_size}:{info.st_mtime_ns}".encode()), info.st_size
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest(), info.st_size


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def read_checked(
    path: Path,
    root: Path,
    max_bytes: int,
    sha256: str,
    real_root: str | None = None,
    real_folders: dict[Path, str] | None = None,
) -> bytes:
    """The file's bytes, or ``Refused`` saying why it can never be inspected
    (``real_root``: as ``within`` takes it; ``real_folders``: folder -> the folder
    resolved, filled here, for a caller that reads many files of a few folders)."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        raise Refused("the file disappeared before it was inspected") from None
    if stat.S_ISLNK(info.st_mode):
        raise Refused("symbolic links are not inspected; cameras must write real files")
    real_folder = None
    if real_folders is not None:
        folder = path.parent
        if folder not in real_folders:
            real_folders[folder] = os.path.realpath(folder)
        real_folder = real_folders[folder]
    if not within(path, root, real_root, real_folder):
        raise Refused(f"the path resolves outside the watched folder {root}")
    if path.suffix.lower() not in IMAGE_SUFFIXES:
        raise Refused(
            f"not an image file (suffix '{path.suffix}'); cameras must write "
            f"{', '.join(IMAGE_SUFFIXES)}"
        )
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"not a regular file but {_kind(info.st_mode)}; cameras must write files")
    if info.st_size == 0:
        raise Refused("zero-byte file")
    if info.st_size > max_bytes:
        raise Refused(f"file of {info.st_size} bytes is larger than the {max_bytes}-byte limit")
    data = path.read_bytes()
    if _digest(data) != sha256:
        raise Refused(
            "the file changed after it was discovered; the new content is queued as its own row"
        )
    wrong = signature_reason(data[:HEAD_BYTES], path.suffix)  # before the trailer: a text
    if wrong is not None:  # file named notes.png is not "truncated"
        raise Refused(wrong)
    if not has_trailer(sniff(data[:HEAD_BYTES]), data[-TRAILER_WINDOW:]):
        raise Refused("truncated image (no end-of-image trailer)")
    return data


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def decode(data: bytes, suffix: str = "", max_pixels: int = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """RGB ``uint8`` pixels of an encoded image, or ``Refused`` with the decoder's reason
    (wrong signature, a header over the pixel limit, bytes OpenCV rejects)."""
    try:
        return decode_image(data, suffix=suffix, max_pixels=max_pixels)
    except DecodeError as err:
        raise Refused(str(err)) from None
