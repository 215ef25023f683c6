"""A method from outside the product, registered at run time: ``profile create``,
``profile calibrate``, ``profile test`` and ``profile export`` run it through the
registry, its section read from the profile file, with no product file naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.registry import METHODS, metrics, register, unregister
from tests.detect_images import product_image, with_defect
from tests.line.make_fixture import write_image
from tests.methods.pixel_method import PIXEL
from tests.profiles.conftest import write_checkpoint


@pytest.fixture
def pixel() -> Iterator[None]:
    register(PIXEL)
    yield
    unregister(PIXEL.name)


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def verdicts(output: str) -> list[dict]:
    """The JSON array ``profile test --json`` printed (log lines may come before it)."""
    return json.JSONDecoder().raw_decode(output[output.index("\n[") + 1 :])[0]


def test_a_method_registered_at_run_time_makes_tests_and_exports_profiles(
    pixel, tmp_path: Path
) -> None:
    assert "pixel" in metrics() and METHODS["pixel"] is PIXEL
    for seed in range(4):
        write_image(tmp_path / f"refs/{seed}.png", product_image(48, 64, seed))
    for seed in range(10):
        write_image(tmp_path / f"good/{seed}.png", product_image(48, 64, seed + 10))
    query = tmp_path / "query.png"
    write_image(query, with_defect(product_image(48, 64, 1), (10, 20, 12, 12)))
    checkpoint = write_checkpoint(tmp_path / "tiny.safetensors", seed=0)
    root = str(tmp_path / "profiles")
    run("profile", "create", "part", "-m", str(checkpoint), "-r", str(tmp_path / "refs"),
        "--metric", "pixel", "--device", "cpu", "--root", root)  # fmt: skip
    file = tmp_path / "profiles/part/profile.yaml"
    written = yaml.safe_load(file.read_text())
    assert written["detection"]["metric"] == "pixel" and written["detection"]["gain"] == 1.0
    written["detection"]["gain"] = 2.0  # its own setting, read from the file
    file.write_text(yaml.safe_dump(written))
    run("profile", "calibrate", "part", "--good", str(tmp_path / "good"), "--root", root)
    on_torch = verdicts(run("profile", "test", "part", str(query), "--json", "--no-fail",
                            "--root", root, "-o", str(tmp_path / "maps")))  # fmt: skip
    reference = DetectionSettings(metric="pixel", gain=2.0)
    detector = PIXEL.torch_detector([], reference, lambda: None)
    assert on_torch[0]["score"] > 0 and detector.scoring["gain"] == 2.0
    run("profile", "export", "part", "--runtime", "onnxruntime", "--root", root)
    exported = yaml.safe_load(file.read_text())
    assert exported["detection"]["runtime"] == "onnxruntime"
    assert sorted(exported["exported"]["files"]) == ["pixel.json"]
    on_line = verdicts(run("profile", "test", "part", str(query), "--json", "--no-fail",
                           "--root", root, "-o", str(tmp_path / "maps")))  # fmt: skip
    assert on_line[0]["score"] == on_torch[0]["score"]
    assert on_line[0]["anomalous"] == on_torch[0]["anomalous"]


def test_a_method_cannot_take_a_metric_another_has(pixel) -> None:
    with pytest.raises(ValueError, match="clashes with a registered one"):
        register(PIXEL)
    with pytest.raises(ValueError, match="metric pixel reads no setting 'comparator'"):
        DetectionSettings(metric="pixel", comparator="a" * 64)


def test_an_unregistered_metric_is_unknown_again(pixel) -> None:
    unregister(PIXEL.name)
    try:
        with pytest.raises(ValueError, match="metric 'pixel' is unknown"):
            DetectionSettings(metric="pixel")
    finally:
        register(PIXEL)
