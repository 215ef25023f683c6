"""`padformer-edge train` as a real subprocess: single process and two-process DDP (gloo)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from padformer_edge.model.checkpoint import load_checkpoint
from tests.train_helpers import mvtec_like_tree

REPO = Path(__file__).resolve().parent.parent
RECIPE = """\
model: {preset: tiny}
data: {num_refs: 2, num_workers: 0}
loss: {perceptual: none}
optim: {batch_size: 2, warmup_steps: 1}
stages: {within_view: {epochs: 1}, cross_view: {epochs: 1}}
checkpoint: {every_steps: 100}
"""


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    return env


def _run_in_own_group(cmd: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run ``cmd`` in its own process group so a hang cannot leave workers behind."""
    with subprocess.Popen(
        cmd,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


def _events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    data = mvtec_like_tree(tmp_path / "data", {"a": 4, "b": 4}, padded=True, with_test=False)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    return data, recipe


def test_cli_trains_and_reports_errors_in_one_line(setup, tmp_path: Path) -> None:
    data, recipe = setup
    cmd = [
        sys.executable,
        "-m",
        "padformer_edge",
        "--log-format",
        "json",
        "train",
        "--config",
        str(recipe),
        "--out",
        str(tmp_path / "run"),
    ]
    done = subprocess.run(
        [*cmd, "--data", str(data)], env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "model written to" in done.stdout
    names = [e["event"] for e in _events(done.stderr)]
    assert names.count("stage_started") == 2 and names[-1] == "train_finished"
    assert (tmp_path / "run" / "model.safetensors").is_file()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{tmp}/nope"], "does not exist; pass --data"),
        (["--data", "{tmp}/empty"], "no good training images found"),
        (["--data", "{tmp}/data", "--device", "tpu"], "unknown device 'tpu'"),
        (["--data", "{tmp}/data", "--resume"], "no resume point"),
    ],
)
def test_cli_user_errors_are_one_line_and_exit_2(
    setup, tmp_path: Path, monkeypatch, capsys, args: list[str], message: str
) -> None:
    from padformer_edge.cli.app import main

    _, recipe = setup
    (tmp_path / "empty").mkdir()
    argv = ["padformer-edge", "train", "--config", str(recipe), "--out", str(tmp_path / "run")]
    monkeypatch.setattr(sys, "argv", argv + [a.format(tmp=tmp_path) for a in args])
    with pytest.raises(SystemExit) as exit_info:
        main()
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_two_process_ddp_on_cpu_keeps_ranks_identical(setup, tmp_path: Path) -> None:
    data, recipe = setup
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    cmd += ["-m", "padformer_edge", "--log-format", "json", "train", "--config", str(recipe)]
    cmd += ["--data", str(data), "--out", str(tmp_path / "ddp"), "--device", "cpu"]
    done = _run_in_own_group(cmd, timeout=170)
    assert done.returncode == 0, done.stderr[-3000:]
    events = _events(done.stderr)
    compared = [e for e in events if e["event"] == "ranks_compared"]
    assert len(compared) == 1 and compared[0]["agree"] is True
    first, second = compared[0]["fingerprints"]
    assert first == second
    started = [e for e in events if e["event"] == "stage_started"]
    assert len(started) == 2 and all(e["world_size"] == 2 for e in started)  # rank 0 alone logs
    _, metadata = load_checkpoint(tmp_path / "ddp" / "model.safetensors")
    assert metadata["global_step"] == 4  # 8 images / (2 per process x 2 processes) x 2 stages
