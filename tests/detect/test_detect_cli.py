"""``padformer-edge detect`` end to end: real checkpoint, real PNG files, real process."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.detect_files import detect_files
from padformer_edge.model.checkpoint import save_checkpoint
from padformer_edge.model.padformer import build_model
from tests.cli_process import run_cli
from tests.detect_images import product_image, with_defect

FAST = DetectionSettings(metric="auto", passes=3, device="cpu")


def write_png(path: Path, rgb: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("detect_cli")
    torch.manual_seed(0)
    save_checkpoint(root / "tiny.safetensors", build_model("tiny"), {"note": "random weights"})
    for seed in range(3):
        write_png(root / "refs" / f"good_{seed}.png", product_image(60, 80, seed=seed))
    good = product_image(60, 80, seed=9)
    write_png(root / "queries" / "a" / "part.png", good)
    write_png(root / "queries" / "b" / "part.png", with_defect(good, (20, 30, 10, 10)))
    return root


def test_cli_scores_images_and_writes_heatmaps(workspace):
    out = workspace / "heatmaps"
    result = run_cli(
        "detect", "--model", str(workspace / "tiny.safetensors"),
        "--references", str(workspace / "refs"), "--passes", "3", "--device", "cpu",
        "--out", str(out), "--raw", "--json",
        str(workspace / "queries" / "a" / "part.png"),
        str(workspace / "queries" / "b" / "part.png"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)  # one array, like every --json
    assert [Path(r["file"]).parent.name for r in rows] == ["a", "b"]
    assert [Path(r["heatmap"]).name for r in rows] == ["part.heatmap.png", "part-2.heatmap.png"]
    for row in rows:
        assert row["score"] >= 0 and row["seconds"] > 0
        assert cv2.imread(row["heatmap"]).shape == (60, 80, 3)
        assert np.load(row["raw_map"]).shape == (60, 80)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp files left


def test_threshold_gives_verdicts_and_the_exit_status(workspace):
    """A folder argument scores its images; any score above --threshold is an anomaly and
    the status 1, which --no-fail turns back into 0. Off a terminal, progress is logged."""
    base = [
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--passes", "2", "--device", "cpu", "--json", str(workspace / "queries" / "a"),
        str(workspace / "queries" / "b" / "part.png"),
    ]  # fmt: skip
    failed = run_cli(*base, "--threshold", "0")
    assert failed.returncode == 1, failed.stderr
    rows = json.loads(failed.stdout)
    assert [r["anomalous"] for r in rows] == [True, True]
    events = [json.loads(line) for line in failed.stderr.splitlines()]
    progress = [e for e in events if e["event"].startswith("progress")]
    assert progress[-1] == {**progress[-1], "event": "progress.done", "done": 2, "total": 2}
    kept = run_cli(*base, "--threshold", "0", "--no-fail")
    assert kept.returncode == 0, kept.stderr
    passed = run_cli(*base, "--threshold", str(max(r["score"] for r in rows)))
    assert passed.returncode == 0, passed.stderr
    assert [r["anomalous"] for r in json.loads(passed.stdout)] == [False, False]
    unjudged = run_cli(*base)
    assert unjudged.returncode == 0 and json.loads(unjudged.stdout)[0]["anomalous"] is None


def test_threshold_outlines_the_heatmap_and_refuses_an_impossible_scale(workspace, tmp_path):
    """With --threshold the heatmap is drawn on the threshold's scale, the region above it
    outlined in magenta; a --heatmap-max at or below it is refused before the model loads."""
    base = [
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--passes", "2", "--device", "cpu", "--json", "--no-fail",
        str(workspace / "queries" / "b" / "part.png"),
    ]  # fmt: skip
    plain = run_cli(*base, "--out", str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr
    score = json.loads(plain.stdout)[0]["score"]
    anchored = run_cli(*base, "--out", str(tmp_path / "anchored"), "--threshold", str(score / 2))
    assert anchored.returncode == 0, anchored.stderr
    magenta = np.array([255, 0, 255], np.uint8)
    for folder, outlined in (("plain", False), ("anchored", True)):
        picture = cv2.imread(str(tmp_path / folder / "part.heatmap.png"))
        assert np.all(picture == magenta, axis=2).any() == outlined
    refused = run_cli(*base, "--out", str(tmp_path / "x"), "-t", "1", "--heatmap-max", "0.5")
    assert refused.returncode == 2
    assert "--heatmap-max 0.5 must lie above --threshold 1" in refused.stderr


def test_cli_reports_a_user_error_as_one_line_and_status_2(workspace):
    broken = workspace / "broken.png"
    broken.write_bytes(b"\x89PNG truncated")
    result = run_cli("detect", "-m", str(workspace / "tiny.safetensors"),
                     "-r", str(workspace / "refs"), str(broken))  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "broken.png is not a decodable picture" in result.stderr
    assert "Traceback" not in result.stderr


def test_table_output_lists_file_score_and_time(workspace):
    query = workspace / "queries" / "a" / "part.png"
    result = CliRunner().invoke(app, [
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--passes", "2", "--device", "cpu", str(query),
    ], env={"COLUMNS": "300"})  # fmt: skip
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert any("file" in line and "score" in line and "time (s)" in line for line in lines)
    assert any(str(query) in line for line in lines)


def test_empty_reference_folder_is_a_user_error(workspace, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no pictures here")
    with pytest.raises(UserError, match="holds no images"):
        detect_files(workspace / "tiny.safetensors", tmp_path / "empty",
                     [workspace / "queries" / "a" / "part.png"], FAST)  # fmt: skip


def test_reference_of_another_size_is_named(workspace, tmp_path):
    refs = tmp_path / "refs"
    write_png(refs / "a.png", product_image(60, 80))
    write_png(refs / "b.png", product_image(61, 80))
    with pytest.raises(UserError, match=r"reference .*b\.png is 80x61 pixels but a\.png is 80x60"):
        detect_files(workspace / "tiny.safetensors", refs,
                     [workspace / "queries" / "a" / "part.png"], FAST)  # fmt: skip


def test_checkpoint_of_another_format_is_a_user_error(workspace, tmp_path):
    from safetensors.torch import save_file

    foreign = tmp_path / "foreign.safetensors"
    save_file({"weight": torch.zeros(2, 2)}, str(foreign))
    with pytest.raises(UserError, match="not a padformer-edge checkpoint"):
        detect_files(foreign, workspace / "refs",
                     [workspace / "queries" / "a" / "part.png"], FAST)  # fmt: skip
    pickle_file = tmp_path / "model.pth"
    pickle_file.write_bytes(b"PK\x03\x04 a torch zip pickle")
    with pytest.raises(UserError, match="not a safetensors file"):
        detect_files(pickle_file, workspace / "refs",
                     [workspace / "queries" / "a" / "part.png"], FAST)  # fmt: skip


def test_image_too_small_to_score_is_named(workspace, tmp_path):
    small = write_png(tmp_path / "thumb.png", product_image(3, 40))
    with pytest.raises(UserError, match=r"image .*thumb\.png is only 40x3 pixels"):
        detect_files(workspace / "tiny.safetensors", workspace / "refs", [small], FAST)


def test_ctrl_c_on_a_long_folder_is_one_line_and_status_130(workspace, tmp_path):
    """SIGINT once the first image is scored: the process says so and exits 130."""
    import os
    import signal
    import subprocess
    import sys

    from tests.cli_process import REPO

    folder = tmp_path / "many"
    folder.mkdir()
    for n in range(3000):  # hard links: thousands of images without the disk space
        os.link(workspace / "queries" / "a" / "part.png", folder / f"{n:04d}.png")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "padformer_edge", "detect", "-m",
         str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
         "--passes", "2", "--device", "cpu", str(folder)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    first = process.stderr.readline()  # the first progress event: scoring has begun
    assert json.loads(first)["event"] == "progress", first
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    lines = [line for line in rest.splitlines() if not line.startswith("{")]
    assert lines == ["interrupted (Ctrl-C): the command stopped before it finished; run it again."]
