"""Camera-folder entries a careless or hostile source can produce, for tests and chaos.

Each builder writes one entry and returns the fragment its row's reason must contain:
a decompression bomb (a valid, small PNG whose pixels would take gigabytes), a header
that lies about its size, a text file named ``.png``, a FIFO, a folder and a symlink out
of the root named like images, and a good image under a name that is not UTF-8.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

BAD_NAME = b"bad_\xff\xfe_name"  # not UTF-8: Python keeps it as lone surrogates


def _chunk(kind: bytes, data: bytes) -> bytes:
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


def png_bomb(width: int, height: int) -> bytes:
    """A complete, valid 1-bit greyscale PNG of ``width`` x ``height`` black pixels:
    a few kilobytes on disk, ``width * height * 3`` bytes once decoded to colour."""
    row = b"\x00" + bytes((width + 7) // 8)  # filter byte, then packed pixels
    compressor = zlib.compressobj(9)
    pixels = b"".join(compressor.compress(row * 1000) for _ in range(height // 1000))
    pixels += compressor.compress(row * (height % 1000)) + compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", pixels)
        + _chunk(b"IEND", b"")
    )


def png_header_only(width: int, height: int) -> bytes:
    """A PNG of a few dozen bytes whose header declares ``width`` x ``height`` and which
    holds no pixel data at all."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IEND", b"")


def plant(folder: Path, tag: str, outside: Path, good: bytes) -> dict[str, str]:
    """Write one of each hostile entry into ``folder`` (names prefixed by ``tag``);
    returns {name as stored on its row: fragment of the expected reason}. ``outside``
    is an existing file out of the camera root; ``good`` the bytes of a good PNG."""
    expected: dict[str, str] = {}

    def entry(name: str, reason: str, write: Callable[[Path], None]) -> None:
        write(folder / name)
        expected[name] = reason

    entry(f"{tag}_bomb.png", "12000x12000 pixels", lambda p: p.write_bytes(png_bomb(12000, 12000)))
    entry(
        f"{tag}_liar.png",
        "50000x50000 pixels",
        lambda p: p.write_bytes(png_header_only(50000, 50000)),
    )
    entry(f"{tag}_notes.png", "not a PNG file", lambda p: p.write_text("shift notes\n"))
    entry(f"{tag}_fifo.png", "a FIFO", lambda p: os.mkfifo(p))
    entry(f"{tag}_link.png", "symbolic links", lambda p: p.symlink_to(outside))
    raw = os.fsencode(folder) + b"/" + tag.encode() + b"_" + BAD_NAME + b".png"
    with open(raw, "wb") as handle:
        handle.write(good)
    expected[f"{tag}_bad_\\xff\\xfe_name.png"] = "not valid UTF-8"
    (folder / f"{tag}_folder.png").mkdir()  # logged once, no row
    return expected
