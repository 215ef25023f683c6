"""Defects in camera pixels (``synth --frame --thin-px``) and parts cut by the frame's edge
(``--edge-cut``): widths and contrast as recorded, boxes and masks clipped to the frame."""

from __future__ import annotations

import json
import math
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.synth import ViewCounts, render_dataset
from padformer_edge_training.synth.frame_scratches import (
    COLOUR_TOLERANCE,
    SCRATCH_KIND,
    draw_scratch,
)
from padformer_edge_training.synth.frames import (
    Framer,
    FrameSpec,
    Placement,
    box_of,
    parse_pixel_range,
)
from tests.cli_process import run_cli

COUNTS = ViewCounts(train=1, test_per_defect=4, test_good=1)
GREY = 100  # the synthetic part's colour: a scratch on it brightens, never clips


def _read(path: Path, flags: int = cv2.IMREAD_COLOR) -> np.ndarray:
    image = cv2.imread(str(path), flags)
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB) if image.ndim == 3 else image


def _disc(tile: int) -> tuple[np.ndarray, np.ndarray]:
    """A grey disc filling a ``tile`` px render: its pixels and its cover."""
    ys, xs = np.mgrid[0:tile, 0:tile]
    covered = np.hypot(xs - (tile - 1) / 2, ys - (tile - 1) / 2) <= tile / 2 - 1
    return np.full((tile, tile, 3), GREY, np.uint8), covered


def _measured_width(mask: np.ndarray, record: dict) -> float:
    """The band's area over its centreline's length, less its round caps (pi w^2 / 4 per
    stroke): a band's pixel count is its area to within its outline's discrepancy, which
    for the strokes drawn here (18 px and longer) stays well under half a pixel of width."""
    width = record["width_px"]
    caps = record["strokes"] * math.pi * width**2 / 4
    return (float(mask.sum()) - caps) / record["length_px"]


def _scratched(width: tuple[int, int], seed: int, noise: float = 0.0):
    spec = FrameSpec(320, 256, part_scale=(0.8, 0.8), belt="belt", noise=noise)
    framer = Framer(spec, 0, (0, 0, 0))
    rgb, covered = _disc(204)
    placement = Placement(204, 60, 26, 0, 1.0, (0.0, 0.0, 0.0))
    pasted = framer.paste(placement, rgb, covered)
    part = framer.mask(placement, covered)
    rng = np.random.default_rng(seed)
    scratch = draw_scratch(pasted, part, width, (25.0, 80.0), rng)
    assert scratch is not None
    return framer, placement, pasted, part, scratch, rng


@pytest.mark.parametrize("width", [(1, 1), (2, 2), (3, 3)])
def test_a_scratch_is_as_wide_as_asked_in_frame_pixels(width: tuple[int, int]) -> None:
    for seed in range(6):
        _, _, pasted, part, scratch, _ = _scratched(width, seed)
        assert scratch.record["width_px"] == width[0]
        assert abs(_measured_width(scratch.mask, scratch.record) - width[0]) < 0.5
        assert not (scratch.mask & ~part).any()  # on the part, never on the belt
        changed = np.abs(scratch.frame.astype(int) - pasted).max(axis=2) > COLOUR_TOLERANCE
        assert (changed == scratch.mask).all()  # the mask is exactly the changed pixels


def test_the_recorded_contrast_is_the_change_in_the_written_frame() -> None:
    """PNG and no noise: the file's change over the mask is the recorded contrast, and on
    a grey part no level clips, so it is the drawn ``levels`` rounded to whole levels."""
    for seed in range(4):
        framer, placement, pasted, _, scratch, rng = _scratched((1, 3), seed)
        frame = framer.sensor(scratch.frame, placement, rng)
        data = np.frombuffer(framer.encode(frame), np.uint8)
        decoded = cv2.cvtColor(cv2.imdecode(data, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        change = np.abs(decoded.astype(int) - pasted).max(axis=2)[scratch.mask]
        assert abs(change.mean() - scratch.record["contrast"]) <= 0.005  # recorded to 0.01
        assert abs(scratch.record["contrast"] - abs(scratch.record["levels"])) <= 0.5
        assert scratch.record["levels"] > 0  # brighter on a part darker than mid-grey


def test_sensor_noise_moves_the_contrast_by_its_standard_error() -> None:
    noise = 3.0
    framer, placement, pasted, _, scratch, rng = _scratched((2, 3), 1, noise=noise)
    frame = framer.sensor(scratch.frame, placement, rng)
    signed = (frame.astype(float) - pasted)[scratch.mask].mean(axis=1)  # all channels move
    samples = 3 * int(scratch.mask.sum())
    error = 4 * noise / math.sqrt(samples) + 0.5  # four standard errors, and the rounding
    assert abs(signed.mean() - scratch.record["levels"]) < error


def test_an_edge_cut_places_the_part_across_the_edge_and_clips_its_box() -> None:
    spec = FrameSpec(160, 128, part_scale=(0.5, 0.5), belt="plain", edge_cut=1.0)
    framer = Framer(spec, 0, (0, 0, 0))
    rgb, covered = _disc(64)
    for seed in range(8):
        placement = framer.place(np.random.default_rng(seed))
        assert min(placement.x, placement.y) < 0 or placement.x + 64 > 160 or placement.y + 64 > 128
        x0, y0, x1, y1 = box_of(placement, covered, framer)
        assert 0 <= x0 < x1 <= 160 and 0 <= y0 < y1 <= 128
        assert x0 == 0 or y0 == 0 or x1 == 160 or y1 == 128
        assert framer.cut(placement, covered)
        shown = framer.mask(placement, covered)
        frame = framer.compose(placement, np.random.default_rng(seed), rgb, covered)
        assert ((frame == GREY).all(axis=2) == shown).all()
    whole = FrameSpec(160, 128, part_scale=(0.5, 0.5), belt="plain")
    inside = Framer(whole, 0, (0, 0, 0)).place(np.random.default_rng(0))
    assert not Framer(whole, 0, (0, 0, 0)).cut(inside, covered)


@pytest.fixture(scope="module")
def framed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A duck in 240 x 200 frames, scratches 1-3 px wide, half the frames cut by an edge."""
    spec = FrameSpec(240, 200, part_scale=(0.6, 0.8), belt="belt", thin_px=(1, 3),
                     edge_cut=0.5)  # fmt: skip
    out = tmp_path_factory.mktemp("cuts") / "framed"
    return render_dataset(["builtin:duck"], out, COUNTS, size=64, defects=["Stains"], frame=spec)


def test_rendered_scratches_are_recorded_in_frame_pixels(framed: Path) -> None:
    images = json.loads((framed / "duck" / "frames.json").read_text())["images"]
    for n in range(COUNTS.test_per_defect):
        record = images[f"test/{SCRATCH_KIND}/{n}"]
        mask = cv2.imread(str(framed / "duck" / "ground_truth" / SCRATCH_KIND / f"{n}_mask.png"), 0)
        frame = _read(framed / "duck" / "test" / SCRATCH_KIND / f"{n}.png")
        assert mask.shape == (200, 240) and frame.shape == (200, 240, 3)
        assert 1 <= record["width_px"] <= 3 and record["defect_px"] == int((mask > 0).sum())
        assert COLOUR_TOLERANCE < record["contrast"] <= abs(record["levels"]) + 0.5  # may clip
        assert 25 <= abs(record["levels"]) <= 80
        x0, y0, x1, y1 = record["box"]
        ys, xs = np.nonzero(mask)
        assert x0 <= xs.min() and xs.max() < x1 and y0 <= ys.min() and ys.max() < y1
    manifest = json.loads((framed / "dataset.json").read_text())["frame"]
    assert manifest["thin_px"] == [1, 3] and manifest["edge_cut"] == 0.5


def test_cut_frames_are_flagged_with_their_boxes_and_masks_clipped(framed: Path) -> None:
    images = json.loads((framed / "duck" / "frames.json").read_text())["images"]
    flags = []
    for name, record in images.items():
        x, y = record["at"]
        tile = record["tile"]
        across = x < 0 or y < 0 or x + tile > 240 or y + tile > 200
        x0, y0, x1, y1 = record["box"]
        assert 0 <= x0 < x1 <= 240 and 0 <= y0 < y1 <= 200
        if record["cut"]:
            assert across and (x0 == 0 or y0 == 0 or x1 == 240 or y1 == 200)
        if not across:
            assert not record["cut"]
        flags.append(record["cut"])
        if name.startswith("test/Stains"):
            mask = cv2.imread(str(framed / "duck" / "ground_truth" / "Stains" /
                                  f"{name.rsplit('/', 1)[1]}_mask.png"), 0)  # fmt: skip
            assert mask.shape == (200, 240) and (mask > 0).sum() >= 12  # still visible
    assert any(flags) and not all(flags)


def test_bad_thin_and_cut_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--thin-px 0-3 is out of range"):
        FrameSpec(160, 128, thin_px=(0, 3))
    with pytest.raises(UserError, match="--thin-contrast 2-10 is out of range"):
        FrameSpec(160, 128, thin_px=(1, 3), thin_contrast=(2.0, 10.0))
    with pytest.raises(UserError, match=r"--edge-cut 1\.5 is not a share"):
        FrameSpec(160, 128, edge_cut=1.5)
    with pytest.raises(UserError, match=r"--thin-px '1\.5-3' is not whole pixels"):
        parse_pixel_range("1.5-3")
    base = ("synth", "--mesh", "builtin:duck", "--out", str(tmp_path / "o"), "--frame", "160x128")
    lossy = run_cli(*base, "--thin-px", "1-3", "--jpeg-quality", "80")
    orphan = run_cli(*base, "--thin-contrast", "20-40")
    assert lossy.returncode == 2 and "--jpeg-quality 80 would blur Scratches" in lossy.stderr
    assert orphan.returncode == 2 and "--thin-contrast applies to scratches" in orphan.stderr
    assert not (tmp_path / "o").exists()


def test_the_cli_renders_scratches_and_cut_frames(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    result = run_cli(
        "synth", "--mesh", "builtin:lego", "--out", str(out), "--train-views", "1",
        "--test-views-per-defect", "1", "--good-test-views", "1", "--frame", "200x160",
        "--part-scale", "0.7-0.9", "--thin-px", "2-3", "--thin-contrast", "30-40",
        "--edge-cut", "1", "--jpeg-quality", "95",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 class(es) x 6 images" in result.stdout  # 1 + 1 good, 3 kinds, 1 scratch
    spec = json.loads((out / "dataset.json").read_text())["frame"]
    assert spec["thin_px"] == [2, 3] and spec["thin_contrast"] == [30.0, 40.0]
    assert spec["edge_cut"] == 1.0
    images = json.loads((out / "lego" / "frames.json").read_text())["images"]
    scratch = images[f"test/{SCRATCH_KIND}/0"]
    assert 2 <= scratch["width_px"] <= 3 and 30 <= abs(scratch["levels"]) <= 40
    assert (out / "lego" / "test" / SCRATCH_KIND / "0.jpg").is_file()
    for record in images.values():  # every frame crosses an edge; its box stays inside
        x0, y0, x1, y1 = record["box"]
        assert 0 <= x0 < x1 <= 200 and 0 <= y0 < y1 <= 160
