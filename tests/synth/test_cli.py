"""``padformer-edge synth`` run as a real subprocess, the way a user runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import cv2

from tests.cli_process import run_cli


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli("--log-format", "json", "synth", *args)


def test_synth_renders_a_dataset(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = _cli(
        "--mesh", "builtin:lego", "--out", str(out), "--train-views", "2",
        "--test-views-per-defect", "1", "--good-test-views", "1", "--size", "48",
        "--background", "#000000",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "1 class(es) x 6 images" in result.stdout
    # Every line is a log event: pybullet's build banner, printed from C, is one too.
    logged = [json.loads(line) for line in result.stderr.splitlines()]
    done = [e for e in logged if e["event"] == "progress.done"]
    assert [(e["job"], e["done"], e["total"]) for e in done] == [("rendering", 6, 6)]
    image = cv2.imread(str(out / "lego" / "train" / "good" / "0.png"))
    assert image.shape == (48, 48, 3) and (image[0, 0] == 0).all()


def test_list_builtins_prints_only_the_catalogue() -> None:
    result = _cli("--list-builtins")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert len(lines) >= 6 and all(line.startswith("builtin:") for line in lines)


def test_user_errors_are_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = _cli("--mesh", str(tmp_path / "gone.stl"), "--out", str(tmp_path / "o"))
    bad_colour = _cli("--mesh", "builtin:mug", "--out", str(tmp_path / "o"), "--background", "x")
    for result in (missing, bad_colour):
        assert result.returncode == 2
        [error] = result.stderr.splitlines()  # the one line, no library banner before it
        assert error.startswith("error:")
    assert "gone.stl does not exist" in missing.stderr
    assert not (tmp_path / "o").exists()


def test_the_pybullet_banner_is_a_debug_event(tmp_path: Path) -> None:
    """What pybullet prints from C when it is imported reaches the log, not the terminal."""
    result = run_cli(
        "--log-format", "json", "--log-level", "DEBUG", "synth", "--mesh", "builtin:duck",
        "--out", str(tmp_path / "o"), "--background", "x",
    )  # fmt: skip
    assert result.returncode == 2
    *logged, error = result.stderr.splitlines()
    assert error.startswith("error: --background 'x' is not a colour")
    native = [e for e in map(json.loads, logged) if e["event"] == "native_output"]
    assert [(e["library"], e["level"]) for e in native] == [("pybullet", "debug")]
    assert native[0]["line"].startswith("pybullet build time:")
