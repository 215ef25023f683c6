"""The reduced-scale decode study (``research/decode_scale.py``): its boxes land on the
pixels libjpeg's reduced decode gives, and its gaps are the relative score moves."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from research.decode_scale import decode, relative_gaps, scaled_box


@pytest.mark.parametrize("scale", [2, 4, 8])
def test_a_box_on_a_reduced_decode_covers_the_same_part_of_the_frame(scale: int) -> None:
    """An odd-sized JPEG whose right half is white: the reduced decode's size is the full
    size divided and rounded up, as ``scaled_box`` divides a corner, and the box of the
    white half lands on the reduced frame's white half."""
    height, width = 203, 301
    frame = np.zeros((height, width, 3), np.uint8)
    frame[:, 152:] = 255
    ok, data = cv2.imencode(".jpg", frame, [cv2.IMWRITE_JPEG_QUALITY, 100])
    assert ok
    reduced = decode(data, scale)
    assert reduced.shape[:2] == scaled_box((0, 0, width, height), scale)[2:][::-1]
    x0, y0, x1, y1 = scaled_box((152 + scale, 0, width, height), scale)
    assert reduced[y0:y1, x0:x1].min() > 200  # inside the white half, past the blurred edge
    assert reduced[:, : 152 // scale - 1].max() < 55


def test_gaps_are_relative_to_the_full_decode() -> None:
    assert relative_gaps([2.0, 4.0], [2.2, 3.0]) == pytest.approx([0.1, 0.25])
