"""Finding the part in a camera frame (``detect.locate``): a synthetic frame with a part of
known box on a travelling belt (the synth's own belt, its seams and marks moved), frames of
the belt alone, a part cut by the frame's edge, the margin and the settings refused."""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import pytest

from padformer_edge.detect.locate import BeltModel, Located, LocateSettings, box_iou, locate
from padformer_edge.errors import UserError
from padformer_edge_training.synth.frames import Framer, FrameSpec, Placement

SPEC = FrameSpec(320, 256, belt="belt", light=0.08, colour=5, noise=2)


@pytest.fixture(scope="module")
def framer() -> Framer:
    return Framer(SPEC, 11, (0, 0, 0))


def _part(size: int) -> tuple[np.ndarray, np.ndarray]:
    """A two-tone part: a body and an arm, the arm the belt's own grey for a stretch."""
    rgb = np.zeros((size, size, 3), np.uint8)
    cover = np.zeros((size, size), np.uint8)
    centre = (size // 2, size // 2)
    cv2.ellipse(cover, centre, (size // 3, size // 5), 30, 0, 360, 1, -1)
    cv2.rectangle(cover, (size // 2, size // 2), (size - 4, size // 2 + 8), 1, -1)
    rgb[cover > 0] = (200, 150, 40)
    rgb[size // 2 : size // 2 + 9, size // 2 : size - 4] = (90, 160, 200)
    return rgb, cover > 0


def _framed(framer: Framer, x: int, y: int, size: int, seed: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    lit = framer.place_empty(rng)
    placement = Placement(size, x, y, lit.belt_offset, lit.gain, lit.shift)
    rgb, cover = _part(size)
    frame = framer.compose(placement, rng, rgb, cover)
    rows, cols = np.flatnonzero(cover.any(axis=1)), np.flatnonzero(cover.any(axis=0))
    return frame, [x + cols[0], y + rows[0], x + cols[-1] + 1, y + rows[-1] + 1]


def _empty(framer: Framer, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return framer.compose(framer.place_empty(rng), rng)


def _models(framer: Framer) -> dict[str, BeltModel]:
    references = [_framed(framer, 20 + 60 * i, 30 + 20 * i, 110, 100 + i)[0] for i in range(4)]
    return {
        "photo": BeltModel.from_photo(framer.belt_photo()),
        "references": BeltModel.from_references(references),
    }


@pytest.mark.parametrize("where", [(40, 50), (170, 90), (120, 20)])
def test_the_part_box_is_found_against_the_belt(framer: Framer, where: tuple[int, int]) -> None:
    frame, truth = _framed(framer, *where, 120, seed=where[0])
    for name, belt in _models(framer).items():
        found = locate(frame, belt)
        assert found.found and not found.cut, name
        assert box_iou(found.box, truth) >= 0.85, (name, found.box, truth)


def test_an_empty_belt_is_no_part(framer: Framer) -> None:
    for belt in _models(framer).values():
        for seed in range(6):  # the belt moved and the light changed every time
            assert locate(_empty(framer, seed), belt) == Located(None)


def test_a_part_cut_by_the_edge_says_so(framer: Framer) -> None:
    """A camera whose frame ends 60 px sooner on the right: the part runs off it."""
    frame, truth = _framed(framer, 180, 100, 120, seed=3)
    frame, photo = frame[:, :260], framer.belt_photo()[:, :260]
    assert truth[2] > 260
    found = locate(frame, BeltModel.from_photo(photo))
    assert found.cut and found.box[2] == 260
    assert box_iou(found.box, [*truth[:2], 260, truth[3]]) >= 0.85


def test_the_margin_grows_the_box_inside_the_frame(framer: Framer) -> None:
    photo = framer.belt_photo()
    wide = BeltModel.from_photo(photo, LocateSettings(margin=0.25))
    frame, _ = _framed(framer, 100, 60, 120, seed=4)
    tight = locate(frame, BeltModel.from_photo(photo)).box
    grown = locate(frame, wide).box
    width, height = tight[2] - tight[0], tight[3] - tight[1]
    # Both boxes are rounded outwards from one float box, the tight one up to a pixel on
    # each side: the margin's quarter of that, and a pixel for each rounding, is the slack.
    expected = (tight[0] - width / 4, tight[1] - height / 4, tight[2] + width / 4,
                tight[3] + height / 4)  # fmt: skip
    assert np.abs(np.subtract(grown, expected)).max() <= 2.5
    corner, _ = _framed(framer, 2, 2, 120, seed=4)
    clipped = locate(corner, wide)
    assert clipped.box[0] == 0 and min(clipped.box) >= 0


def test_the_diff_method_compares_with_the_photo(framer: Framer) -> None:
    frame, truth = _framed(framer, 100, 60, 120, seed=5)
    settings = LocateSettings(method="diff", levels=40)
    found = locate(frame, BeltModel.from_photo(framer.belt_photo(), settings))
    assert found.found and box_iou(found.box, truth) >= 0.5


@pytest.mark.parametrize(
    ("settings", "words"),
    [
        ({"method": "cnn"}, "locate method 'cnn' is unknown"),
        ({"work_side": 8}, "locate work side 8 is out of range"),
        ({"margin": 2.0}, "locate margin 2 is out of range"),
    ],
)
def test_bad_settings_are_refused(settings: dict, words: str) -> None:
    with pytest.raises(UserError, match=words):
        LocateSettings(**settings)


def test_a_photo_of_another_size_is_refused(framer: Framer) -> None:
    belt = BeltModel.from_photo(cv2.resize(framer.belt_photo(), (160, 160)))
    with pytest.raises(UserError, match="photograph the belt with the camera's own frame size"):
        locate(_empty(framer, 0), belt)


def test_the_module_imports_without_torch() -> None:
    """The torch-free line install finds parts with it."""
    code = (
        "import sys; import padformer_edge.detect.locate; "
        "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if 'torch' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
