"""One frozen, validated settings object from every entry point to the Detector."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.profiles.schema import ProfileConfig
from tests.cli_process import run_cli
from tests.detect_double import CleanReconstructor
from tests.detect_images import product_image


def test_settings_are_frozen_and_copies_are_validated() -> None:
    settings = DetectionSettings(metric="auto", passes=4, device="cpu")
    with pytest.raises(ValidationError):
        settings.passes = 1  # type: ignore[misc]
    assert settings.replace(seed=3) == DetectionSettings(
        metric="auto", passes=4, device="cpu", seed=3
    )
    with pytest.raises(ValidationError):
        settings.replace(passes=1)
    with pytest.raises(ValidationError):
        settings.replace(schedule="colour")


def test_the_detector_runs_with_the_object_it_was_given() -> None:
    settings = DetectionSettings(
        metric="auto", passes=3, schedule="balanced", max_batch=6, device="cpu"
    )
    clean = product_image(48, 64)
    detector = Detector(CleanReconstructor(), [clean, clean], settings)
    assert detector.settings is settings
    assert detector.passes == 3 and detector.max_batch == 6
    assert detector.masks.shape[0] == 3
    assert Detector(CleanReconstructor(), [clean]).settings == DetectionSettings(
        metric="auto"
    )  # "auto"


def test_a_profile_file_holds_the_same_settings_type() -> None:
    field = ProfileConfig.model_fields["detection"]
    assert field.annotation is DetectionSettings


def test_detect_validates_its_options_before_reading_anything(tmp_path) -> None:
    # `detect` used to build its options positionally and let --passes 1 through.
    done = run_cli("detect", "-m", str(tmp_path / "none.safetensors"), "-r", str(tmp_path),
                   "--passes", "1", str(tmp_path / "none.png"))  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "--passes: input should be greater than or equal to 2" in lines[0]
    assert "you gave --passes 1" in lines[0]


def test_the_metric_options_are_the_registry_metrics() -> None:
    """``--metric`` offers the words the scoring methods score, and no other."""
    from padformer_edge.methods.registry import metrics

    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"})
    assert "[" + "|".join(metrics()) + "]" in result.output.replace(" ", "")


def test_eval_offers_every_setting_a_profile_has() -> None:
    result = CliRunner().invoke(app, ["eval", "--help"], env={"COLUMNS": "200"})
    text = re.sub(r"\s+", " ", result.output)
    for option in ("--passes", "--mask-ratio", "--schedule", "--metric", "--seed", "--device",
                   "--precision", "--batch-size"):  # fmt: skip
        assert option in text
    assert "[random|balanced]" in text.replace(" ", "")


def test_a_wrong_device_for_a_profile_command_is_refused_at_parse_time(tmp_path) -> None:
    result = CliRunner().invoke(
        app, ["profile", "test", "duck", str(tmp_path / "a.png"), "--device", "tpu",
              "--root", str(tmp_path)],
    )  # fmt: skip
    assert isinstance(result.exception, UserError)
    assert "--device 'tpu'" in str(result.exception)
    assert "auto, cpu, cuda" in str(result.exception)
    assert not np.any([p.name == "heatmaps" for p in tmp_path.iterdir()])
