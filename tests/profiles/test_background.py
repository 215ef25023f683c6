"""``profile create --background``: the empty belt's photo stored with the profile, each
frame's part found against it and its crop scored, the map back in frame coordinates,
a frame of the belt alone answered "no part", a part the frame cuts flagged."""

from __future__ import annotations

import math
import re
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.detect.framed import FramedDetector
from padformer_edge.detect.images import read_image
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.profiles.calibrate import pin_threshold, score_files
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.verdicts import inspect_images
from tests import framed_frames
from tests.cli_process import run_cli
from tests.profiles.conftest import FAST


def _png(path: Path, image: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    return path


@pytest.fixture
def camera(tmp_path: Path) -> tuple[Path, Path]:
    """A folder of four reference frames and the belt photo, as a line engineer has them."""
    refs = tmp_path / "refs"
    for index, frame in enumerate(framed_frames.references()):
        _png(refs / f"{index}.png", frame)
    return refs, _png(tmp_path / "belt.png", framed_frames.belt_photo())


def test_create_records_the_photo_and_frames_are_read_at_the_part(tmp_path, camera, checkpoint):
    refs, photo = camera
    root = tmp_path / "profiles"
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    profile = load_profile(root, "belted")
    entry = profile.config.background
    assert entry is not None and entry.sha256 == file_sha256(photo)
    assert (profile.folder / entry.file).read_bytes() == photo.read_bytes()
    assert "belt photo background.png matches" in profile.verify_runnable()  # doctor's
    detector = profile.build_detector()
    assert isinstance(detector, FramedDetector)
    assert detector.scoring["framing"]["background"] == entry.sha256

    frame, box = framed_frames.framed(110, 70, seed=5, dent=True)
    found = detector.detect([frame])[0]
    x0, y0, x1, y1 = found.part_box
    assert x0 <= box[0] and y0 <= box[1] and x1 >= box[2] and y1 >= box[3]
    assert x1 - x0 == y1 - y0 and not found.part_cut and not found.no_part
    # the heatmap is the frame's: the crop's own map at the crop's place, 0 elsewhere
    assert found.anomaly_map.shape == frame.shape[:2]
    _, box_read, part = detector.framing.part(frame)  # the crop, under the photo's light
    assert box_read == found.part_box and part.shape[:2] == (y1 - y0, x1 - x0)
    alone = detector.inner.detect([part])[0]
    at_crop = frame_map(alone.anomaly_map, (y1 - y0, x1 - x0))  # the crop's own map
    # the same bilinear taps either way; float32 sums of four products differ by rounding
    tolerance = 4 * np.finfo(np.float32).eps * float(at_crop.max())
    assert np.allclose(found.anomaly_map[y0:y1, x0:x1], at_crop, rtol=0, atol=tolerance)
    outside = found.anomaly_map.copy()
    outside[y0:y1, x0:x1] = 0
    assert not outside.any() and found.anomaly_map[y0:y1, x0:x1].any()
    assert found.score == alone.score


def test_an_empty_belt_is_no_part_and_a_cut_part_says_so(tmp_path, camera, checkpoint):
    refs, photo = camera
    root = tmp_path / "profiles"
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    detector = load_profile(root, "belted").build_detector()
    cut_frame, _ = framed_frames.framed(0, 70, seed=6, to_left_edge=True)
    empty, cut = detector.detect([framed_frames.empty(7), cut_frame])
    assert empty.no_part and math.isnan(empty.score) and empty.part_box is None
    assert empty.anomaly_map.shape == (framed_frames.HEIGHT, framed_frames.WIDTH)
    assert not empty.anomaly_map.any()
    assert cut.part_cut and cut.part_box[0] == 0 and math.isfinite(cut.score)


def test_a_profile_without_photo_scores_frames_whole(tmp_path, camera, checkpoint):
    refs, _ = camera
    root = tmp_path / "profiles"
    create_profile(root, "whole", checkpoint, refs, settings=FAST)
    profile = load_profile(root, "whole")
    assert profile.config.background is None and profile.framing() is None
    detector = profile.build_detector()
    found = detector.detect([framed_frames.empty(7)])[0]
    assert not isinstance(detector, FramedDetector)
    assert not found.no_part and found.part_box is None and math.isfinite(found.score)
    # a profile.yaml written before the key existed loads and scores the same
    path = profile.folder / "profile.yaml"
    path.write_text(path.read_text().replace("background: null\n", ""))
    earlier = load_profile(root, "whole")
    assert earlier.config.background is None
    assert earlier.build_detector().detect([framed_frames.empty(7)])[0].score == found.score


def test_a_changed_photo_and_a_reference_without_part_are_refused(tmp_path, camera, checkpoint):
    refs, photo = camera
    root = tmp_path / "profiles"
    _png(refs / "9-empty.png", framed_frames.empty(8))
    with pytest.raises(UserError, match=r"9-empty\.png shows no part against the belt photo"):
        create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    assert not (root / "belted").exists()
    (refs / "9-empty.png").unlink()
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    profile = load_profile(root, "belted")
    stored = profile.folder / profile.config.background.file
    _png(stored, read_image(stored)[::-1].copy())
    with pytest.raises(UserError, match=r"belt photo .* differs from the sha256"):
        profile.build_detector()


def test_cli_create_background_refuses_a_missing_photo(tmp_path, camera, checkpoint):
    refs, _ = camera
    done = run_cli("profile", "create", "x", "--references", str(refs), "--model",
                   str(checkpoint), "--background", str(tmp_path / "nope.png"),
                   "--root", str(tmp_path / "p"))  # fmt: skip
    assert done.returncode != 0
    assert f"belt photo {tmp_path / 'nope.png'} does not exist" in done.stderr
    assert "Traceback" not in done.stderr


def test_profile_test_says_no_part_and_cut(tmp_path, camera, checkpoint):
    refs, photo = camera
    root = tmp_path / "profiles"
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    pin_threshold(load_profile(root, "belted"), -1e9)  # every scored frame is anomalous
    cut, _ = framed_frames.framed(0, 70, seed=6, to_left_edge=True)
    files = [_png(tmp_path / "empty.png", framed_frames.empty(7)), _png(tmp_path / "cut.png", cut)]
    empty, edge = inspect_images(root, "belted", files, tmp_path / "heat")
    assert (empty.no_part, empty.score, empty.anomalous) == (True, None, False)
    assert empty.word == "no part"
    assert empty.shown() == ("-", "-") and empty.heatmap.is_file()
    assert edge.anomalous and edge.part_cut and edge.word == "ANOMALY (cut)"


def test_calibration_refuses_a_frame_of_the_empty_belt(tmp_path, camera, checkpoint):
    refs, photo = camera
    root = tmp_path / "profiles"
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    detector = load_profile(root, "belted").build_detector(calibrating=True)
    good = [_png(tmp_path / "good" / "0.png", framed_frames.framed(60, 50, seed=9)[0]),
            _png(tmp_path / "good" / "1.png", framed_frames.empty(10))]  # fmt: skip
    with pytest.raises(UserError, match=r"1\.png shows no part against the profile's belt"):
        score_files(detector, good)
    assert score_files(detector, good[:1]).shape == (1,)


def test_a_threshold_set_before_the_light_was_matched_is_refused(tmp_path, camera, checkpoint):
    """A framed profile calibrated by a version that scored crops under the frame's own
    light holds a threshold for other scores: it is refused with the command that fixes it."""
    refs, photo = camera
    root = tmp_path / "profiles"
    create_profile(root, "belted", checkpoint, refs, settings=FAST, background=photo)
    pin_threshold(load_profile(root, "belted"), 0.5)
    profile = load_profile(root, "belted")
    detector = profile.build_detector()
    assert detector.scoring["framing"]["light"] == "belt exposure"
    profile.check_scoring(detector.scoring)  # its own threshold holds
    path = profile.folder / "profile.yaml"
    text = path.read_text()
    assert text.count("light: belt exposure") == 1  # the calibration's record of the framing
    path.write_text(re.sub(r"\n *light: belt exposure\n", "\n", text))
    earlier = load_profile(root, "belted")
    refused = r"light matched by belt exposure, belt painted out\); run .*calibrate belted"
    with pytest.raises(UserError, match=refused):
        earlier.check_scoring(earlier.build_detector().scoring)
