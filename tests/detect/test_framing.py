"""The crop a found part is scored on (``detect.framing``): square, grown by the margin,
inside the frame, and the crop's map pasted back at its place in the frame."""

from __future__ import annotations

import numpy as np

from padformer_edge.detect.framing import crop, crop_box, paste, same_size


def test_the_crop_is_the_box_made_square_and_grown_by_the_margin() -> None:
    x0, y0, x1, y1 = crop_box((100, 80, 160, 120), 256, 320, margin=0.1)
    assert x1 - x0 == y1 - y0 == 72  # the longer side, 60, and a tenth of it each side
    assert (x0 + x1) / 2 == 130 and (y0 + y1) / 2 == 100  # centred on the part


def test_a_crop_at_the_edge_moves_inside_and_one_larger_than_the_frame_is_cut() -> None:
    assert crop_box((0, 100, 40, 140), 256, 320, margin=0.25) == (0, 90, 60, 150)
    assert crop_box((290, 0, 320, 30), 256, 320, margin=0.0) == (290, 0, 320, 30)
    assert crop_box((10, 10, 310, 250), 256, 320, margin=0.1) == (0, 0, 320, 256)


def test_the_pasted_map_lies_at_the_crop_and_is_zero_elsewhere() -> None:
    frame = np.arange(256 * 320 * 3, dtype=np.uint32).reshape(256, 320, 3)
    box = (40, 30, 104, 94)
    assert np.array_equal(crop(frame, box), frame[30:94, 40:104])
    crop_map = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    pasted = paste(crop_map, box, 256, 320)
    assert pasted.shape == (256, 320) and pasted.dtype == np.float32
    assert np.array_equal(pasted[30:94, 40:104], crop_map)  # the crop's own size: as is
    pasted[30:94, 40:104] = 0
    assert not pasted.any()


def test_references_crops_are_brought_to_one_size() -> None:
    crops = [np.zeros((side, side, 3), np.uint8) for side in (60, 72, 90)]
    assert {c.shape for c in same_size(crops)} == {(72, 72, 3)}  # the median side
