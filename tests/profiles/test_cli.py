"""``padformer-edge profile`` commands: in-process for the flow, a real process for the
one-line error and exit status an operator sees."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.schema import ProfileConfig
from padformer_edge.tools.config_kinds import check_config
from tests.profiles.conftest import write_checkpoint

REPO = Path(__file__).resolve().parents[2]


def invoke(*args: str):
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_profile_commands_end_to_end(tmp_path, product, checkpoint, monkeypatch):
    root = ["--root", str(tmp_path / "profiles")]
    state, here = tmp_path / "state", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(state))
    monkeypatch.chdir(here)  # a command must not write into the folder it runs in
    out = invoke("profile", "create", "duck", "--model", str(checkpoint), "--references",
                 str(product / "train" / "good"), "--shots", "3", "--passes", "3",
                 "--device", "cpu", *root)  # fmt: skip
    assert "references (3 of 24):" in out
    assert "threshold " in invoke(
        "profile", "calibrate", "duck", "--good", str(product / "test" / "good"),
        "--target-fpr", "0.1", *root,
    )  # fmt: skip
    broken = tmp_path / "profiles" / "broken" / "profile.yaml"
    broken.parent.mkdir()
    broken.write_text("name: broken\nbogus: 1\n")
    listed = json.loads(invoke("profile", "list", "--json", *root))
    assert [(row["name"], row["references"]) for row in listed[:1]] == [("duck", 3)]
    assert listed[1]["name"] == "broken" and "line 2, key 'bogus'" in listed[1]["error"]
    shown = invoke("profile", "show", "duck", *root)
    config = ProfileConfig.model_validate(yaml.safe_load(shown.split("\n", 1)[1]))
    assert config.calibration is not None and config.calibration.threshold == listed[0]["threshold"]
    assert config.detection.metric == "compare"  # the product's default metric
    kind, _ = check_config(tmp_path / "profiles" / "duck" / "profile.yaml")
    assert kind == "profile"
    image = product / "test" / "Missing" / "0.png"
    shown = invoke("profile", "test", "duck", str(image), "--json", "--no-fail", *root)
    [verdict] = json.loads(shown)
    assert verdict["anomalous"] == (verdict["score"] > config.calibration.threshold)
    # no --out: under the state folder, one folder per profile, nothing in the current one
    assert Path(verdict["heatmap"]) == state / "profile-test" / "duck" / "0.heatmap.png"
    assert Path(verdict["heatmap"]).is_file() and not list(here.iterdir())
    [named] = json.loads(invoke(
        "profile", "test", "duck", str(image), "-o", str(tmp_path / "hm"), "--json",
        "--no-fail", *root,
    ))  # fmt: skip
    assert Path(named["heatmap"]) == tmp_path / "hm" / "0.heatmap.png"
    assert Path(named["heatmap"]).is_file() and named["score"] == verdict["score"]


def test_calibrate_reports_the_rate_it_promises_and_can_set_the_upper_bound(
    tmp_path, product, checkpoint
):
    """Issue 51: a threshold now comes with the false-alarm rate it promises (exact
    order-statistic bounds from its own good scores), and --upper-bound sets it so that
    the target is that rate's upper end, refusing too few images before any scoring."""
    root = ["--root", str(tmp_path / "profiles")]
    invoke("profile", "create", "duck", "--model", str(checkpoint), "--references",
           str(product / "train" / "good"), "--shots", "3", "--passes", "3",
           "--device", "cpu", *root)  # fmt: skip
    good = ("--good", str(product / "test" / "good"))
    shown = invoke("profile", "calibrate", "duck", *good, "--target-fpr", "0.1", *root)
    stored = load_profile(tmp_path / "profiles", "duck").calibration
    assert stored is not None and stored.rule == "quantile" and stored.rate_bounds is not None
    bounds = stored.rate_bounds
    assert (bounds.count, bounds.images_needed, bounds.confidence) == (40, 29, 0.95)
    assert f"promises on good parts: {bounds.low:.2%} to {bounds.high:.2%}" in shown
    assert f"from {bounds.exceeding} of 40 good scores above it" in shown

    shown = invoke("profile", "calibrate", "duck", *good, "--target-fpr", "0.1",
                   "--upper-bound", *root)  # fmt: skip
    stored = load_profile(tmp_path / "profiles", "duck").calibration
    assert stored is not None and stored.rule == "upper-bound"
    assert stored.rate_bounds is not None and stored.rate_bounds.high <= 0.1
    assert stored.margin == 0.0 and stored.threshold in stored.good_scores
    assert "the lowest of 40 good scores whose promised false-alarm rate is at most 0.1" in shown
    assert "the target 0.1 is within the upper end." in shown

    result = CliRunner().invoke(app, ["profile", "calibrate", "duck", *good, "--target-fpr",
                                      "0.01", "--upper-bound", *root])  # fmt: skip
    assert isinstance(result.exception, UserError)
    assert "40 good images cannot promise a false-alarm rate of 0.01 with 95% confidence" in (
        str(result.exception)
    )
    assert "give at least 299 held-out good images" in str(result.exception)
    assert load_profile(tmp_path / "profiles", "duck").calibration == stored  # unchanged


def test_changed_checkpoint_is_one_line_and_exit_2(tmp_path, product, checkpoint):
    """A profile on a PADFormer metric reads its checkpoint (a ``compare`` profile only
    records it: tests/methods/compare)."""
    root = ["--root", str(tmp_path / "profiles")]
    invoke("profile", "create", "duck", "--model", str(checkpoint), "--references",
           str(product / "train" / "good"), "--shots", "2", "--passes", "3",
           "--metric", "lab", *root)  # fmt: skip
    write_checkpoint(checkpoint, seed=5)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "padformer_edge", "profile", "calibrate", "duck", "--good",
         str(product / "test" / "good"), *root],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "changed since the profile was made" in lines[0]
    assert "profile set-model duck --model FILE" in lines[0]


def test_a_calibration_warning_is_printed_once(tmp_path, product, checkpoint):
    """40 good images for a target of 0.01: the warning that they are too few reaches the
    user once, as the command's own line (it was a log event as well)."""
    root = ["--root", str(tmp_path / "profiles")]
    invoke("profile", "create", "duck", "--model", str(checkpoint), "--references",
           str(product / "train" / "good"), "--shots", "3", "--passes", "3",
           "--device", "cpu", *root)  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for log_format in ("console", "json"):
        result = subprocess.run(
            [sys.executable, "-m", "padformer_edge", "--log-format", log_format, "profile",
             "calibrate", "duck", "--good", str(product / "test" / "good"), "--target-fpr",
             "0.01", *root],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        warning = "40 good images are too few for a false-alarm rate of 0.01"
        assert result.stderr.count(warning) == 1, result.stderr
        assert f"warning: {warning}" in result.stderr


def test_bad_option_names_the_option(tmp_path, product, checkpoint):
    result = CliRunner().invoke(
        app,
        ["profile", "create", "duck", "--model", str(checkpoint), "--references",
         str(product / "train" / "good"), "--mask-ratio", "1.5", "--root", str(tmp_path)],
    )  # fmt: skip
    assert result.exit_code != 0
    assert "--mask-ratio: input should be less than 1" in str(result.exception)
