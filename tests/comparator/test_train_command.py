"""`padformer-edge train` on a comparator recipe, as a real subprocess: the recipe's kind
picks the trainer, SIGTERM leaves a resume point, and `--resume` ends with the weights of
an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.train_helpers import mvtec_like_tree, refused_train_command, signal_once_resumable

REPO = Path(__file__).resolve().parents[2]
RECIPE = """\
kind: comparator
data: {{root: {root}, min_good: 4, max_good: 6}}
model: {{input_size: 64, dim: 32, depth: 1, heads: 2, top_k: 4}}
episodes: {{reference_counts: [2, 3]}}
optim: {{steps: {steps}, batch_size: 3, warmup_steps: 1, window: 4}}
checkpoint: {{every_steps: 1, keep_every: 100}}
cpu_threads: 1
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}


def _command(recipe: Path, out: Path, *extra: str) -> list[str]:
    cmd = [sys.executable, "-m", "padformer_edge", "--log-format", "json", "train"]
    return [*cmd, "--config", str(recipe), "--out", str(out), *extra]


def _events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def render(tmp_path_factory) -> Path:
    return mvtec_like_tree(
        tmp_path_factory.mktemp("render"), {"alpha": 6, "beta": 6}, padded=False, size=72
    )


def _recipe(folder: Path, render: Path, steps: int) -> Path:
    path = folder / f"comparator-{steps}.yaml"
    path.write_text(RECIPE.format(root=render, steps=steps))
    return path


def test_sigterm_then_resume_ends_with_the_weights_of_an_uninterrupted_run(
    render: Path, tmp_path: Path
) -> None:
    recipe = _recipe(tmp_path, render, steps=40)
    straight = subprocess.run(
        _command(recipe, tmp_path / "straight"),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert straight.returncode == 0, straight.stderr[-2000:]
    assert "comparator written to" in straight.stdout and "training finished" in straight.stdout
    steps = [e for e in _events(straight.stderr) if e["event"] == "train_step"]
    assert steps and steps[-1]["step"] == 40 and steps[-1]["stage"] == "comparator"
    assert steps[-1]["samples_per_s"] > 0 and {"focal", "dice", "image"} <= steps[-1].keys()
    assert "mse" not in steps[-1]  # a term the comparator's loss has not is left out

    run = tmp_path / "halves"
    status, stdout, stderr = signal_once_resumable(
        _command(recipe, run), _env(), run, signal.SIGTERM, timeout=240
    )
    assert status == 130, stderr[-2000:]
    assert "resume point written at step" in stdout and "--resume" in stdout
    ended = [e for e in _events(stderr) if e["event"] == "comparator_stopped"]
    assert len(ended) == 1 and 0 < ended[0]["step"] < 40, "SIGTERM came after the last step"
    assert not (run / "model.safetensors").exists()

    resumed = subprocess.run(
        [*_command(recipe, run), "--resume"],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    started = [e for e in _events(resumed.stderr) if e["event"] == "stage_started"]
    assert started[0]["start_step"] == ended[0]["step"]  # continued, not restarted
    first = load_file(str(tmp_path / "straight" / "model.safetensors"))
    second = load_file(str(run / "model.safetensors"))
    assert first.keys() == second.keys()
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_stop_at_ends_the_call_early_without_an_error(render: Path, tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, render, steps=6)
    done = subprocess.run(
        _command(recipe, tmp_path / "run", "--stop-at", "2", "--device", "cpu"),
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "training stopped" in done.stdout and "step 2" in done.stdout
    assert not (tmp_path / "run" / "model.safetensors").exists()


@pytest.mark.parametrize(
    ("kind", "args", "message"),
    [
        ("comparator", ["--init", "generic"], "--init fine-tunes PADFormer"),
        ("comparator", ["--resume"], "holds no resume point"),
        ("comparator", ["--data", "{tmp}/nope"], "does not exist; pass --data"),
        ("comparator", ["--device", "tpu"], "unknown device 'tpu'"),
        ("padformer", ["--stop-at", "3"], "--stop-at ends a comparator run early"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(
    render: Path, tmp_path: Path, monkeypatch, capsys, kind: str, args: list[str], message: str
) -> None:
    if kind == "comparator":
        recipe = _recipe(tmp_path, render, steps=2)
    else:
        recipe = tmp_path / "padformer.yaml"
        recipe.write_text("model: {preset: tiny}\n")
    argv = ["--config", str(recipe), "--out", str(tmp_path / "run")]
    err = refused_train_command(argv + [a.format(tmp=tmp_path) for a in args], monkeypatch, capsys)
    assert message in err, err
    assert not (tmp_path / "run").exists()  # a refused run leaves no folder
