"""Regions to ignore (``ignore_regions``): a date stamp drawn inside one moves no score and
no pixel of the map, the same stamp outside is found; the heatmap outlines the regions;
a malformed file or a region past the frame is one sentence and changes nothing; a
threshold set without the regions is never used with them."""

from __future__ import annotations

import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.detect.detection import Detection
from padformer_edge.detect.heatmap import IGNORED_BGR, write_heatmap
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.regions import RegionsDetector, hidden_cells, without_regions
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.regions import read_regions, set_regions
from padformer_edge.profiles.verdicts import inspect_images
from tests import framed_frames
from tests.cli_process import run_cli

STAMP_REGION = [[0, 0], [90, 0], [90, 60], [0, 60]]  # the frame's top-left corner
REGIONS_YAML = (
    "ignore_regions:\n  - name: stamp\n    points: [[0, 0], [90, 0], [90, 60], [0, 60]]\n"
)
PART_AT = (110, 70)  # where the part lies in every frame here, clear of the region


def _png(path: Path, image: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    return path


def _stamped(frame: np.ndarray, x: int, y: int) -> np.ndarray:
    """``frame`` with a white date stamp (black digits) at (x, y): what a belt printer adds."""
    out = frame.copy()
    cv2.rectangle(out, (x, y), (x + 50, y + 25), (255, 255, 255), -1)
    cv2.putText(out, "12", (x + 5, y + 20), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 0), 2)
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A compare profile (the default score) on four good frames of a fixed camera."""
    base = tmp_path_factory.mktemp("regions")
    for index in range(4):
        _png(base / "refs" / f"{index}.png", framed_frames.framed(*PART_AT, seed=100 + index)[0])
    create_profile(
        base / "profiles", "line", None, base / "refs", settings=DetectionSettings(device="cpu")
    )
    return base


@pytest.fixture
def root(made: Path, tmp_path: Path) -> Path:
    """A copy of the module's profiles folder, for a test to change."""
    shutil.copytree(made / "profiles", tmp_path / "profiles")
    return tmp_path / "profiles"


@pytest.fixture
def regions_file(tmp_path: Path) -> Path:
    path = tmp_path / "regions.yaml"
    path.write_text(REGIONS_YAML)
    return path


def test_a_stamp_inside_a_region_moves_nothing_and_one_outside_is_found(root, regions_file):
    clean = framed_frames.framed(*PART_AT, seed=7)[0]
    inside, outside = _stamped(clean, 15, 15), _stamped(clean, 250, 210)
    before = load_profile(root, "line").build_detector().detect([clean, inside, outside])
    assert before[1].score > before[0].score  # the stamp counts without the region

    profile = set_regions(root, "line", regions_file)
    detector = profile.build_detector()
    assert isinstance(detector, RegionsDetector)
    plain, hidden, found = detector.detect([clean, inside, outside])
    # the stamp lies wholly inside the region and its cells are left out: only the little
    # the cells beside the region see of it remains, against all of it without the region
    stamp_alone = before[1].score - before[0].score
    assert abs(hidden.score - plain.score) < 0.05 * stamp_alone
    assert found.score > plain.score + 0.5 * stamp_alone
    assert found.score == pytest.approx(before[2].score)
    drawn = frame_map(hidden.anomaly_map, inside.shape[:2])
    assert np.all(drawn[:60, :90] == hidden.anomaly_map.min())


def test_the_cells_a_region_touches_hide_every_pixel_inside_it() -> None:
    """On a map coarser than the frame, every frame pixel inside a polygon reads only
    hidden cells: set to one value, the region's pixels are that value and no other."""
    rng = np.random.default_rng(3)
    frame_size = (256, 320)
    polygon = np.array([[37.5, 20.0], [141.0, 33.0], [90.0, 101.5]], np.float32)
    for grid in [(16, 20), (32, 40), (9, 13), frame_size]:
        values = rng.random(grid).astype(np.float32) + 1.0
        hidden = hidden_cells([polygon], frame_size, grid)
        values[hidden] = 0.0
        drawn = frame_map(values, frame_size)
        rows, cols = np.mgrid[0 : frame_size[0], 0 : frame_size[1]]
        inside = [  # pixels whose centre lies inside the polygon or on its edge
            cv2.pointPolygonTest(polygon, (float(x) + 0.5, float(y) + 0.5), False) >= 0
            for y, x in zip(rows[:110].ravel(), cols[:110].ravel(), strict=True)
        ]
        inside_map = np.asarray(inside).reshape(110, frame_size[1])
        assert inside_map.sum() > 3000 and np.all(drawn[:110][inside_map] == 0.0), grid
        assert not hidden.all() and (~hidden).sum() >= 0.5 * hidden.size


def test_a_frame_without_part_keeps_no_score() -> None:
    empty = Detection(float("nan"), np.zeros((4, 4), np.float32), [], [], no_part=True)
    without_regions(empty, [np.array(STAMP_REGION, np.float32)], (4, 4))
    assert np.isnan(empty.score) and empty.ignored_regions


def test_the_heatmap_outlines_the_regions_in_white(root, regions_file, tmp_path):
    set_regions(root, "line", regions_file)
    pin_threshold(load_profile(root, "line"), 1e9)  # no verdict in the way
    frame = framed_frames.framed(*PART_AT, seed=8)[0]
    (verdict,) = inspect_images(root, "line", [_png(tmp_path / "f.png", frame)], tmp_path / "h")
    overlay = cv2.imread(str(verdict.heatmap))
    assert overlay.shape[:2] == frame.shape[:2]
    assert tuple(overlay[60, 45]) == IGNORED_BGR and tuple(overlay[50, 90]) == IGNORED_BGR
    assert tuple(overlay[200, 200]) != IGNORED_BGR
    plain = tmp_path / "plain.png"
    detection = Detection(0.0, np.zeros((16, 20), np.float32), [], [])
    write_heatmap(plain, frame, detection.anomaly_map, 0.0)
    assert tuple(cv2.imread(str(plain))[60, 45]) != IGNORED_BGR


def test_setting_regions_drops_the_threshold_and_makes_a_version(root, regions_file):
    pin_threshold(load_profile(root, "line"), 0.5)
    profile = set_regions(root, "line", regions_file)
    assert profile.threshold is None and profile.config.version == 2
    assert [r.name for r in profile.config.ignore_regions] == ["stamp"]
    assert (profile.folder / "versions" / "1" / "profile.yaml").is_file()
    cleared = set_regions(root, "line", None)
    assert cleared.config.ignore_regions == [] and cleared.config.version == 2  # no threshold


def test_a_threshold_set_without_the_regions_is_refused_with_them(root):
    pin_threshold(load_profile(root, "line"), 0.5)
    path = root / "line" / "profile.yaml"
    text = path.read_text().replace("ignore_regions: []\n", "ignore_regions:\n- name: stamp\n"
                                    "  points: [[0, 0], [90, 0], [90, 60], [0, 60]]\n")  # fmt: skip
    path.write_text(text)
    with pytest.raises(
        UserError, match=r"calibrated on scores computed another way.*ignoring stamp"
    ):
        load_profile(root, "line").build_detector()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- name: a\n", "the top level must be a mapping"),
        ("ignore_regions: []\n", "key 'ignore_regions': list should have at least 1 item"),
        ("ignore_regions: [{name: a, points: [[0, 0], [9, 0]]}]\n", "at least 3 items"),
        ("ignore_regions: [{name: a, points: [[0, 0], [9, 0], [18, 0]]}]\n", "enclose no area"),
        ("ignore_regions: [{name: a, points: [[-4, 0], [9, 0], [9, 9]]}]\n", "or equal to 0"),
        ("ignore_regions: [{name: a, points: [[0, 0], [9, 0], [9, 9]], at: 1}]\n", "unknown key"),
        (REGIONS_YAML + "  - name: stamp\n    points: [[0, 0], [9, 9], [0, 9]]\n", "used twice"),
        ("ignore_regions: [{name: a, points: [[0, 0], [9, 0]\n", "not valid YAML"),
    ],
)  # fmt: skip
def test_a_malformed_regions_file_is_one_sentence(tmp_path, text, expected):
    path = tmp_path / "regions.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=expected) as caught:
        read_regions(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)


def test_a_region_past_the_frame_or_covering_it_is_refused_and_changes_nothing(root, tmp_path):
    past = tmp_path / "past.yaml"
    past.write_text("ignore_regions: [{name: label, points: [[300, 0], [330, 0], [330, 40]]}]\n")
    with pytest.raises(UserError, match=r"'label' reaches \(330, 40\), past the 320 x 256 frame"):
        set_regions(root, "line", past)
    whole = tmp_path / "whole.yaml"
    whole.write_text(
        "ignore_regions: [{name: all, points: [[0, 0], [320, 0], [320, 256], [0, 256]]}]\n"
    )
    with pytest.raises(UserError, match="cover the whole 320 x 256 frame"):
        set_regions(root, "line", whole)
    profile = load_profile(root, "line")
    assert profile.config.ignore_regions == [] and profile.config.version == 1


def test_cli_create_and_set_regions(made, tmp_path, regions_file):
    profiles = tmp_path / "p"
    done = run_cli("profile", "create", "cam", "--references", str(made / "refs"),
                   "--ignore-regions", str(regions_file), "--device", "cpu",
                   "--root", str(profiles))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert [r.name for r in load_profile(profiles, "cam").config.ignore_regions] == ["stamp"]
    shown = run_cli("profile", "show", "cam", "--root", str(profiles))
    assert "name: stamp" in shown.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("ignore_regions: [{name: a, points: [[0, 0], [9, 0]]}]\n")
    refused = run_cli("profile", "create", "other", "--references", str(made / "refs"),
                      "--ignore-regions", str(bad), "--root", str(profiles))  # fmt: skip
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert f"{bad}, line 1, key 'ignore_regions.0.points'" in refused.stderr
    assert not (profiles / "other").exists()
    both = run_cli("profile", "set-regions", "cam", "--clear", "--ignore-regions",
                   str(regions_file), "--root", str(profiles))  # fmt: skip
    assert both.returncode != 0 and "needs exactly one of --ignore-regions" in both.stderr
    cleared = run_cli("profile", "set-regions", "cam", "--clear", "--root", str(profiles))
    assert cleared.returncode == 0, cleared.stderr
    assert "ignores no region" in cleared.stdout
    assert load_profile(profiles, "cam").config.ignore_regions == []


def test_config_check_knows_a_regions_file(regions_file):
    """Its one key is also a profile's; the kind whose required keys it has is chosen."""
    done = run_cli("config", "check", str(regions_file))
    assert done.returncode == 0, done.stderr
    assert "valid regions config" in done.stdout
