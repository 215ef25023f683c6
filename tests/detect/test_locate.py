"""Finding the part in a camera frame (``detect.locate``): a synthetic frame with a part of
known box on a travelling belt (the synth's own belt, its seams and marks moved), frames of
the belt alone, a part cut by the frame's edge, the margin and the settings refused."""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import pytest

from padformer_edge.detect.framing import relight
from padformer_edge.detect.locate import (
    SHADING_SIGMA_PX,
    BeltLight,
    BeltModel,
    Located,
    LocateSettings,
    _shading,
    box_iou,
    locate,
)
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


def test_the_shading_made_shrunk_is_the_full_blur() -> None:
    """The belt's shading blurred on a shrunk image (``SHADING_SIGMA_PX``) is the blur of
    the whole image to a tenth of a level, below the 8 bits a camera delivers: at the
    fine scale of a 1280-px frame, where the full blur cost seconds."""
    photo = Framer(FrameSpec(1280, 1024, belt="belt"), 3, (0, 0, 0)).belt_photo()
    image = photo.astype(np.float32)
    sigma = max(image.shape[:2]) / 8
    assert sigma // SHADING_SIGMA_PX > 1  # the shrunk path is the one tested
    full = cv2.GaussianBlur(image, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    assert float(np.abs(_shading(image) - full).max()) < 0.1


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


def _lit_frames(framer: Framer, drifts: list[tuple[float, tuple[float, float, float]]]):
    """The same frame of the part under each (gain for every channel, shift per channel)."""
    rgb, cover = _part(120)
    placement = Placement(120, 90, 60, 37, 1.0, (0.0, 0.0, 0.0))
    flat = framer.paste(placement, rgb, cover).astype(np.float32)
    return [
        np.clip(np.rint(flat * np.float32(gain) + np.float32(shift)), 0, 255).astype(np.uint8)
        for gain, shift in drifts
    ]


def test_the_belt_reads_the_light_and_relight_undoes_an_exposure_drift() -> None:
    """One frame under the photo's light and the same frame brighter, as a drifting lamp or
    exposure makes it: the belt's colour is read in each, and the brighter crop relit is
    the first one's."""
    framer = Framer(FrameSpec(320, 256, belt="belt", light=0.2), 11, (0, 0, 0))
    steady_frame, bright_frame = _lit_frames(framer, [(1.0, (0, 0, 0)), (1.15, (0, 0, 0))])
    belt = BeltModel.from_photo(framer.belt_photo())
    steady, bright = locate(steady_frame, belt), locate(bright_frame, belt)
    assert steady.light is not None and bright.light is not None
    assert box_iou(bright.box, steady.box) >= 0.95
    # each 8-bit frame is rounded by at most half a level per pixel, so the belt's mean
    # colour seen in it moves by at most that: half a level of the darkest channel's mean
    level = min(steady.light.photo)
    assert abs(bright.light.exposure / steady.light.exposure - 1.15) <= 1.15 * 1.0 / level
    x0, y0, x1, y1 = steady.box
    undone = relight(bright_frame[y0:y1, x0:x1], bright.light).astype(int)
    again = relight(steady_frame[y0:y1, x0:x1], steady.light).astype(int)
    # the exposure's own error (one level, above) on the brightest pixel, and each rounding
    assert np.abs(undone - again).max() <= 255 * 1.0 / level + 2


def test_relight_gives_the_belt_the_photos_colour_under_any_drift() -> None:
    """A colour cast too (a shift per channel): the belt around the part comes out with the
    photo's mean colour at the pixels it was read on, whatever the drift."""
    framer = Framer(FrameSpec(320, 256, belt="belt", light=0.2), 11, (0, 0, 0))
    (frame,) = _lit_frames(framer, [(0.9, (6.0, -5.0, 3.0))])
    found = locate(frame, BeltModel.from_photo(framer.belt_photo()))
    assert found.light is not None
    band = frame[:, :40]  # the belt's strip left of the part (x 90 onwards)
    relit = relight(band, found.light).reshape(-1, 3).mean(axis=0)
    # the strip's own colour is not the whole belt's: the drift, not the texture, is undone
    before = band.reshape(-1, 3).mean(axis=0) - np.asarray(found.light.photo)
    after = relit - np.asarray(found.light.photo)
    assert np.abs(after).max() <= 0.25 * np.abs(before).max() + 1.0


def test_relight_is_the_identity_without_a_light_and_stays_in_eight_bits() -> None:
    pixels = np.array([[[10, 100, 250]]], np.uint8)
    assert relight(pixels, None) is pixels
    light = BeltLight(seen=(110.0, 90.0, 100.0), photo=(100.0, 100.0, 100.0))
    assert light.exposure == pytest.approx(1.0)
    # (p - seen) / 1 + photo: the cast alone is undone, channel by channel, clipped at 255
    assert relight(pixels, light).tolist() == [[[0, 110, 250]]]
    bright = BeltLight(seen=(150.0, 150.0, 150.0), photo=(100.0, 100.0, 100.0))
    assert relight(np.array([[[255, 150, 0]]], np.uint8), bright).tolist() == [[[170, 100, 0]]]


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
