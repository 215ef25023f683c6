"""Camera frames (``synth --frame``): the part on a belt, its box and masks in frame
coordinates, the sensor's light, noise and JPEG, and the options refused."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.synth import ViewCounts, render_dataset
from padformer_edge_training.synth.frames import (
    Framer,
    FrameSpec,
    parse_frame_size,
    parse_share_range,
)
from tests.cli_process import run_cli

COUNTS = ViewCounts(train=2, test_per_defect=1, test_good=1)
KEY = (255, 0, 255)  # a colour no built-in part shows: the unframed render's background
TILE = 64  # part_scale 0.5 of a 160 x 128 frame


def _read(path: Path) -> np.ndarray:
    return cv2.cvtColor(cv2.imread(str(path), cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same class, views and defects rendered unframed at 64 px and framed as a 64-px
    part in a 160 x 128 frame: the views come from the class's stream in both."""
    root = tmp_path_factory.mktemp("frames")
    kinds = ["Stains", "Cracks"]
    plain = render_dataset(
        ["builtin:duck"], root / "plain", COUNTS, size=TILE, background=KEY, defects=kinds
    )
    spec = FrameSpec(160, 128, part_scale=(0.5, 0.5), belt="belt", empty=2)
    framed = render_dataset(
        ["builtin:duck"], root / "framed", COUNTS, size=TILE, background=KEY, defects=kinds,
        frame=spec,
    )  # fmt: skip
    return plain, framed


def test_the_framed_part_is_the_render_pasted_at_its_box(pair: tuple[Path, Path]) -> None:
    plain, framed = pair
    sidecar = json.loads((framed / "duck" / "frames.json").read_text())
    assert sidecar["frame"] == [160, 128]
    images = sidecar["images"]
    assert set(images) == {"train/good/0", "train/good/1", "test/good/0", "test/Stains/0",
                           "test/Cracks/0"}  # fmt: skip
    spec = FrameSpec(160, 128, part_scale=(0.5, 0.5), belt="belt")
    belt = Framer(spec, 0, KEY)
    for name, record in images.items():
        render = _read(plain / "duck" / f"{name}.png")
        frame = _read(framed / "duck" / f"{name}.png")
        assert frame.shape == (128, 160, 3) and record["tile"] == TILE
        x, y = record["at"]
        covered = (render != KEY).any(axis=2)
        crop = frame[y : y + TILE, x : x + TILE]
        assert (crop[covered] == render[covered]).all()
        expected = belt.belt_window(record["belt_offset"]).copy()
        expected[y : y + TILE, x : x + TILE][covered] = render[covered]
        assert (frame == expected).all()  # the belt everywhere else, no light or noise asked
        rows, cols = np.flatnonzero(covered.any(axis=1)), np.flatnonzero(covered.any(axis=0))
        box = [x + cols[0], y + rows[0], x + cols[-1] + 1, y + rows[-1] + 1]
        assert record["box"] == box


def test_masks_land_on_the_defect_in_frame_coordinates(pair: tuple[Path, Path]) -> None:
    plain, framed = pair
    images = json.loads((framed / "duck" / "frames.json").read_text())["images"]
    for kind in ("Stains", "Cracks"):
        tile_mask = cv2.imread(str(plain / "duck" / "ground_truth" / kind / "0_mask.png"), 0)
        mask = cv2.imread(str(framed / "duck" / "ground_truth" / kind / "0_mask.png"), 0)
        record = images[f"test/{kind}/0"]
        x, y = record["at"]
        assert mask.shape == (128, 160) and mask.sum() == tile_mask.sum() > 0
        assert (mask[y : y + TILE, x : x + TILE] == tile_mask).all()
        assert record["defect_px"] == int((tile_mask > 0).sum()) and record["contrast"] > 0
        x0, y0, x1, y1 = record["box"]
        inside = np.zeros_like(mask)
        inside[y0:y1, x0:x1] = 1
        assert not (mask * (1 - inside)).any()


def test_empty_belt_frames_and_the_belt_photo(pair: tuple[Path, Path]) -> None:
    _, framed = pair
    photo = _read(framed / "belt.png")
    assert photo.shape == (128, 160, 3)
    belt = Framer(FrameSpec(160, 128, part_scale=(0.5, 0.5), belt="belt"), 0, KEY)
    assert (photo == belt.belt_window(0)).all()
    empty = sorted((framed / "empty").iterdir())
    assert [p.name for p in empty] == ["0.png", "1.png"]
    loop = belt.loop
    for path in empty:  # each is the belt loop at some offset, no part on it
        frame = _read(path)
        assert any((frame == belt.belt_window(o)).all() for o in range(loop.shape[0]))
    manifest = json.loads((framed / "dataset.json").read_text())
    assert manifest["frame"]["width"] == 160 and manifest["frame"]["empty"] == 2


def test_the_same_seed_gives_the_same_bytes(tmp_path: Path) -> None:
    spec = FrameSpec(160, 128, part_scale=(0.3, 0.7), light=0.1, colour=6, noise=2.5, jpeg=92,
                     empty=1, belt="photo")  # fmt: skip
    one, two = (
        render_dataset(["builtin:lego"], tmp_path / n, COUNTS, size=48, frame=spec, seed=3)
        for n in ("a", "b")
    )
    files = sorted(p.relative_to(one) for p in one.rglob("*") if p.is_file())
    assert files and all((one / f).read_bytes() == (two / f).read_bytes() for f in files)
    assert sum(f.suffix == ".jpg" for f in files) == COUNTS.per_class + 1
    assert (one / files[0]).read_bytes() != b""
    for path in (p for p in files if p.suffix == ".jpg"):
        assert (one / path).read_bytes()[:2] == b"\xff\xd8"  # a JPEG start-of-image marker


def test_light_and_noise_are_drawn_per_frame() -> None:
    """A plain mid-grey belt: the frame's mean moves with its gain and shift, its spread is
    the noise's (within what a frame's 61 440 samples and rounding to levels allow)."""
    spec = FrameSpec(160, 128, belt="plain", light=0.2, colour=10, noise=4.0)
    framer = Framer(spec, 0, (128, 128, 128))
    rng = np.random.default_rng(5)
    placement = framer.place_empty(rng)
    frame = framer.compose(placement, rng).astype(np.float64)
    expected = 128 * placement.gain + np.asarray(placement.shift)
    samples = 160 * 128
    error = 4 * 4.0 / np.sqrt(samples)  # four standard errors of a channel's mean
    assert np.abs(frame.mean(axis=(0, 1)) - expected).max() < error + 0.5
    spread = frame.std(axis=(0, 1))
    rounded = np.sqrt(4.0**2 + 1 / 12)  # rounding to levels adds a uniform's variance
    assert np.abs(spread - rounded).max() < 4 * rounded / np.sqrt(2 * samples)
    assert placement.gain != 1.0 and any(placement.shift)


def test_jpeg_quality_trades_size_for_fidelity() -> None:
    frames = {}
    for quality in (60, 95):
        framer = Framer(FrameSpec(160, 128, belt="belt", jpeg=quality), 0, (0, 0, 0))
        frame = framer.belt_window(0)
        data = framer.encode(frame)
        decoded = cv2.cvtColor(cv2.imdecode(np.frombuffer(data, np.uint8), 1), cv2.COLOR_BGR2RGB)
        frames[quality] = (len(data), np.abs(decoded.astype(int) - frame).mean())
    assert frames[95][0] > frames[60][0] and frames[95][1] < frames[60][1]


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: FrameSpec(32, 128), "frame width 32 is out of range"),
        (lambda: FrameSpec(160, 128, part_scale=(0.6, 0.2)), "--part-scale 0.6-0.2"),
        (lambda: FrameSpec(160, 128, part_scale=(0.1, 0.2)), "smaller than 16 px"),
        (lambda: FrameSpec(160, 128, belt="wood"), "--belt 'wood' is unknown"),
        (lambda: FrameSpec(160, 128, jpeg=101), "--jpeg-quality 101"),
        (lambda: FrameSpec(160, 128, noise=-1), "--noise -1"),
        (lambda: parse_frame_size("big"), "--frame 'big' is not a size"),
        (lambda: parse_share_range("a-b"), "--part-scale 'a-b' is not a range"),
    ],
)
def test_bad_frame_options_are_refused(make, words: str) -> None:
    with pytest.raises(UserError, match=words.replace("(", r"\(")):
        make()


def test_the_cli_refuses_lossy_jpeg_for_thin_defects_and_orphan_options(tmp_path: Path) -> None:
    base = ("--log-format", "json", "synth", "--mesh", "builtin:duck", "--out", str(tmp_path / "o"))
    lossy = run_cli(*base, "--frame", "160x128", "--defects", "Cracks", "--jpeg-quality", "80")
    orphan = run_cli(*base, "--noise", "2")
    for result in (lossy, orphan):
        assert result.returncode == 2
        [error] = result.stderr.splitlines()
        assert error.startswith("error:")
    assert "--jpeg-quality 80 would blur Cracks" in lossy.stderr
    assert "--noise applies to camera frames; add --frame" in orphan.stderr
    assert not (tmp_path / "o").exists()


def test_the_cli_renders_frames(tmp_path: Path) -> None:
    out = tmp_path / "framed"
    result = run_cli(
        "synth", "--mesh", "builtin:lego", "--out", str(out), "--train-views", "1",
        "--test-views-per-defect", "1", "--good-test-views", "1", "--frame", "160x128",
        "--part-scale", "0.4-0.9", "--belt", "photo", "--light-gain", "0.1", "--noise", "1.5",
        "--jpeg-quality", "95", "--empty-frames", "1",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    frame = cv2.imread(str(out / "lego" / "test" / "Burrs" / "0.jpg"))
    assert frame.shape == (128, 160, 3)
    assert cv2.imread(str(out / "empty" / "0.jpg")).shape == (128, 160, 3)
    spec = json.loads((out / "dataset.json").read_text())["frame"]
    assert spec["part_scale"] == [0.4, 0.9] and spec["belt"] == "photo" and spec["jpeg"] == 95
    box = json.loads((out / "lego" / "frames.json").read_text())["images"]["test/Burrs/0"]["box"]
    assert 0 <= box[0] < box[2] <= 160 and 0 <= box[1] < box[3] <= 128
