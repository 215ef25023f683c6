"""The one image decoder: bytes in, RGB pixels out, refusing what should not be decoded.

Every decoded image in the project comes through ``decode_image``: the daemon's camera
files, ``detect``'s queries and references, profile references. Before OpenCV sees the
bytes three cheap checks run, each on the first bytes only:

- the format signature, so a text file named ``notes.png`` is "not a PNG file" rather
  than a truncated or corrupt image;
- the width and height the header declares, so a decompression bomb (a 17 kB PNG that
  claims 12000x12000 pixels) is refused before it can take gigabytes and minutes;
- OpenCV's own exceptions (its pixel limit, malformed chunks) become ``DecodeError``
  like every other reason, so a caller handles one exception type per file.

This module never imports torch, and imports OpenCV and NumPy only when it decodes: the
daemon config reads ``DEFAULT_MAX_PIXELS`` from here on every CLI start.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

# Sized for real line cameras (a 48 MP sensor is 8000x6000); a larger header is refused.
DEFAULT_MAX_PIXELS = 50_000_000
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
FORMAT_NAMES = {"png": "PNG", "jpeg": "JPEG", "bmp": "BMP", "tiff": "TIFF", "webp": "WebP"}
SUFFIX_FORMATS = {
    ".png": "png",
    ".jpg": "jpeg",
    ".jpeg": "jpeg",
    ".bmp": "bmp",
    ".tif": "tiff",
    ".tiff": "tiff",
    ".webp": "webp",
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_TRAILER = b"IEND\xaeB`\x82"  # the IEND chunk's type and its fixed CRC
TRAILER_WINDOW = 64  # some encoders pad a few bytes after the JPEG end marker
HEAD_BYTES = 16  # enough for every signature below


class DecodeError(Exception):
    """Bytes that are not a picture this project decodes; ``str`` is the reason, written
    to be stored on a row or completed into a user's error sentence."""


def sniff(head: bytes) -> str | None:
    """The format whose signature ``head`` starts with (``png``, ``jpeg``, ``bmp``,
    ``tiff``, ``webp``), or None."""
    if head.startswith(PNG_SIGNATURE):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(b"BM"):
        return "bmp"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "tiff"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None


def expected_format(suffix: str) -> str | None:
    """The format a file name's suffix promises (``.jpg`` -> ``jpeg``), or None."""
    return SUFFIX_FORMATS.get(suffix.lower())


def signature_reason(head: bytes, suffix: str) -> str | None:
    """None when ``head`` starts with a supported signature, else why the file is refused.

    A camera that writes JPEG bytes under ``.png`` still produces a picture: any
    supported format passes, whatever the suffix; the suffix only names the message.
    """
    if sniff(head) is not None:
        return None
    promised = expected_format(suffix)
    if promised is None:
        return "not an image file: its first bytes match no PNG, JPEG, BMP, TIFF or WebP signature"
    name = FORMAT_NAMES[promised]
    return f"not a {name} file: its first bytes are not the {name} signature"


def has_trailer(fmt: str | None, tail: bytes) -> bool:
    """Whether the last bytes end a JPEG or PNG properly; other formats (and unknown
    bytes, refused elsewhere) have no trailer to check and pass."""
    if fmt == "jpeg":
        return b"\xff\xd9" in tail[-TRAILER_WINDOW:]
    if fmt == "png":
        return tail.endswith(PNG_TRAILER)
    return True


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) as the header declares them, read without decoding; None when
    the header is too short or malformed to say."""
    fmt = sniff(data[:HEAD_BYTES])
    try:
        if fmt == "png":
            if data[12:16] != b"IHDR":
                return None
            return struct.unpack(">II", data[16:24])
        if fmt == "jpeg":
            return _jpeg_dimensions(data)
        if fmt == "bmp":
            width, height = struct.unpack("<ii", data[18:26])
            return abs(width), abs(height)  # a negative height means top-down rows
        if fmt == "tiff":
            return _tiff_dimensions(data)
        if fmt == "webp":
            return _webp_dimensions(data)
    except struct.error:  # the header ends early
        return None
    return None


# Start-of-frame markers carry the size; C4 (Huffman), C8 (reserved) and CC (arithmetic
# conditioning) share the range but are not frames.
_JPEG_FRAMES = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_dimensions(data: bytes) -> tuple[int, int] | None:
    offset = 2
    while offset + 4 <= len(data):
        if data[offset] != 0xFF:
            return None
        marker = data[offset + 1]
        if marker == 0xFF:  # fill byte
            offset += 1
            continue
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:  # markers without a length
            offset += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, or scan data before any frame header
            return None
        (length,) = struct.unpack(">H", data[offset + 2 : offset + 4])
        if marker in _JPEG_FRAMES:
            height, width = struct.unpack(">HH", data[offset + 5 : offset + 9])
            return width, height
        offset += 2 + length
    return None


def _tiff_dimensions(data: bytes) -> tuple[int, int] | None:
    order = "<" if data[:2] == b"II" else ">"
    (ifd,) = struct.unpack(order + "I", data[4:8])
    (count,) = struct.unpack(order + "H", data[ifd : ifd + 2])
    found: dict[int, int] = {}
    for index in range(count):
        entry = ifd + 2 + 12 * index
        tag, kind = struct.unpack(order + "HH", data[entry : entry + 4])
        if tag in (256, 257):  # ImageWidth, ImageLength: SHORT or LONG
            fmt = order + ("H" if kind == 3 else "I")
            found[tag] = struct.unpack(fmt, data[entry + 8 : entry + 8 + struct.calcsize(fmt)])[0]
    if 256 in found and 257 in found:
        return found[256], found[257]
    return None


def _webp_dimensions(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8 ":  # lossy: a key frame's 14-bit sizes after its start code
        if data[23:26] != b"\x9d\x01\x2a":
            return None
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L":  # lossless: 14 bits each of width - 1 and height - 1
        if data[20] != 0x2F:
            return None
        (bits,) = struct.unpack("<I", data[21:25])
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    if chunk == b"VP8X":  # extended: 24-bit canvas width - 1 and height - 1
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    return None


def size_reason(data: bytes, max_pixels: int) -> str | None:
    """None when the header declares a size within ``max_pixels``, else why not."""
    size = dimensions(data)
    if size is None:
        return "corrupt image: its header declares no readable width and height"
    width, height = size
    if width == 0 or height == 0:
        return f"corrupt image: its header declares {width}x{height} pixels"
    if width * height > max_pixels:
        return (
            f"image of {width}x{height} pixels ({width * height / 1e6:.1f} MP) is larger than "
            f"the {max_pixels / 1e6:g} MP limit; refused undecoded"
        )
    return None


def decode_image(
    data: bytes, *, suffix: str = "", max_pixels: int = DEFAULT_MAX_PIXELS
) -> np.ndarray:
    """RGB ``uint8`` pixels ``H x W x 3`` of an encoded image, or ``DecodeError`` saying
    why not: wrong signature, a header over the pixel limit, or bytes OpenCV rejects."""
    reason = signature_reason(data[:HEAD_BYTES], suffix) or size_reason(data, max_pixels)
    if reason is not None:
        raise DecodeError(reason)
    import cv2
    import numpy as np

    try:  # RGB from the decoder itself: no second pass over the pixels to swap channels
        image = cv2.imdecode(np.frombuffer(data, dtype=np.uint8), cv2.IMREAD_COLOR_RGB)
    except cv2.error as err:  # e.g. OpenCV's own pixel limit, a malformed chunk
        detail = " ".join(str(err.err or err).split())
        raise DecodeError(f"corrupt image: OpenCV could not decode it ({detail})") from None
    if image is None:
        raise DecodeError("corrupt image: OpenCV could not decode it")
    return image
