"""The one image decoder: signature first, pixel limit from the header, one error type."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.detect.images import ImageReadError, read_image
from padformer_edge.images.decode import DecodeError, decode_image, dimensions, signature_reason
from tests.hostile_files import png_bomb, png_header_only

REPO = Path(__file__).resolve().parents[2]


def encode(suffix: str, height: int = 37, width: int = 53, *params: int) -> bytes:
    image = np.random.default_rng(0).integers(0, 256, (height, width, 3), dtype=np.uint8)
    ok, data = cv2.imencode(suffix, image, list(params))
    assert ok
    return data.tobytes()


@pytest.mark.parametrize(
    ("suffix", "params"),
    [
        (".png", ()),
        (".jpg", ()),
        (".jpg", (cv2.IMWRITE_JPEG_PROGRESSIVE, 1)),
        (".bmp", ()),
        (".tiff", ()),
        (".webp", ()),
        (".webp", (cv2.IMWRITE_WEBP_QUALITY, 101)),  # lossless
    ],
)
def test_header_size_matches_the_decoded_size(suffix: str, params: tuple[int, ...]) -> None:
    data = encode(suffix, 37, 53, *params)
    assert dimensions(data) == (53, 37)
    assert decode_image(data, suffix=suffix).shape == (37, 53, 3)


def grey_or_wide(kind: str) -> bytes:
    """A PNG that is not plain 8-bit colour: grey, grey with alpha, colour with alpha, or
    16 bits per channel."""
    rng = np.random.default_rng(1)
    shapes = {"grey": (29, 31), "rgba": (29, 31, 4), "grey16": (29, 31), "rgb16": (29, 31, 3)}
    wide = kind.endswith("16")
    pixels = rng.integers(0, 65536 if wide else 256, shapes[kind], dtype=np.uint16)
    image = pixels if wide else pixels.astype(np.uint8)
    return cv2.imencode(".png", image)[1].tobytes()


@pytest.mark.parametrize(
    ("suffix", "data"),
    [
        (".png", encode(".png")),
        (".jpg", encode(".jpg")),
        (".jpg", encode(".jpg", 37, 53, cv2.IMWRITE_JPEG_PROGRESSIVE, 1)),
        (".bmp", encode(".bmp")),
        (".tiff", encode(".tiff")),
        (".webp", encode(".webp")),
        *[(".png", grey_or_wide(kind)) for kind in ("grey", "rgba", "grey16", "rgb16")],
    ],
)
def test_pixels_come_out_as_rgb_of_opencvs_colour_decode(suffix: str, data: bytes) -> None:
    """The decoder hands RGB straight out (no channel swap afterwards); every format
    and channel layout gives exactly the pixels of OpenCV's BGR decode, swapped."""
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    decoded = decode_image(data, suffix=suffix)
    assert decoded.dtype == np.uint8 and decoded.flags.c_contiguous
    np.testing.assert_array_equal(decoded, bgr[:, :, ::-1])


def test_a_decompression_bomb_is_refused_from_its_header() -> None:
    bomb = png_bomb(12000, 12000)
    assert len(bomb) < 20_000  # small on disk ...
    assert dimensions(bomb) == (12000, 12000)  # ... 432 MB as colour pixels
    with pytest.raises(DecodeError, match=r"12000x12000 pixels \(144\.0 MP\) is larger than"):
        decode_image(bomb, suffix=".png")
    # The same file under a raised limit decodes: the refusal is the limit, not the file.
    small = png_bomb(300, 200)
    assert decode_image(small, max_pixels=300 * 200).shape == (200, 300, 3)
    with pytest.raises(DecodeError, match="300x200"):
        decode_image(small, max_pixels=300 * 200 - 1)


def test_a_header_without_pixels_is_refused_by_size_then_as_corrupt() -> None:
    with pytest.raises(DecodeError, match="50000x50000"):
        decode_image(png_header_only(50000, 50000))
    with pytest.raises(DecodeError, match="corrupt image"):
        decode_image(png_header_only(64, 64))


def test_the_signature_is_checked_before_anything_else() -> None:
    text = b"shift notes, not a picture\n"
    assert signature_reason(text, ".png") == (
        "not a PNG file: its first bytes are not the PNG signature"
    )
    assert "not a JPEG file" in str(signature_reason(text, ".JPG"))
    assert "no PNG, JPEG, BMP, TIFF or WebP signature" in str(signature_reason(text, ".dat"))
    with pytest.raises(DecodeError, match="not a PNG file"):
        decode_image(text, suffix=".png")
    # JPEG bytes under a .png name are still a picture.
    assert decode_image(encode(".jpg"), suffix=".png").shape == (37, 53, 3)


def test_opencv_exceptions_become_decode_errors() -> None:
    """OpenCV's own pixel limit raises cv2.error; it must arrive as DecodeError."""
    code = (
        "from tests.hostile_files import png_bomb\n"
        "from padformer_edge.images.decode import DecodeError, decode_image\n"
        "try:\n"
        "    decode_image(png_bomb(20, 20), max_pixels=10**12)\n"
        "except DecodeError as err:\n"
        "    print(err)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENCV_IO_MAX_IMAGE_PIXELS": "100"}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("corrupt image: OpenCV could not decode it (")


def test_read_image_uses_the_same_checks(tmp_path: Path) -> None:
    path = tmp_path / "bomb.png"
    path.write_bytes(png_bomb(12000, 12000))
    with pytest.raises(ImageReadError, match=r"bomb\.png is not a decodable picture \(image of"):
        read_image(path)
