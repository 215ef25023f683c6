"""`padformer-edge train` as a real subprocess: single process and two-process DDP (gloo)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from padformer_edge.model.checkpoint import load_checkpoint
from tests.train_helpers import mvtec_like_tree, refused_train_command, signal_once_resumable

REPO = Path(__file__).resolve().parents[2]
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
    """Run ``cmd`` so that a hang fails the test instead of hanging it: every process it
    starts carries a marker in its environment, and on timeout each one is killed. The
    launcher's process group is not enough: torch's elastic launcher starts its workers
    in sessions of their own, and a worker left alive holds the output pipes open, so
    waiting for them never ended (seen in a full run on an overloaded machine)."""
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    with subprocess.Popen(
        cmd,
        env={**_env(), RUN_MARKER: marker},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        try:
            stdout, stderr = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_marked(marker)
            proc.communicate(timeout=30)
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, stdout, stderr)


RUN_MARKER = "PADFORMER_EDGE_TEST_RUN"


def _kill_marked(marker: str) -> None:
    """SIGKILL every process whose environment carries ``RUN_MARKER=marker``."""
    wanted = f"{RUN_MARKER}={marker}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if wanted in environ.read_bytes().split(b"\0"):
                os.kill(int(environ.parent.name), signal.SIGKILL)
        except (OSError, ValueError):
            continue  # gone already, or not ours to read


def _events(stderr: str) -> list[dict]:
    return [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    data = mvtec_like_tree(tmp_path / "data", {"a": 4, "b": 4}, padded=True, with_test=False)
    recipe = tmp_path / "tiny.yaml"
    recipe.write_text(RECIPE)
    return data, recipe


def test_ctrl_c_leaves_a_resume_point_that_the_cli_continues(setup, tmp_path: Path) -> None:
    data, recipe = setup
    recipe.write_text(
        RECIPE.replace("epochs: 1}", "epochs: 10}").replace("every_steps: 100", "every_steps: 1")
    )
    run = tmp_path / "run"
    # A child inherits an ignored SIGINT (a background CI job ignores it) and Python then
    # leaves it ignored: the child installs Python's own handler before the CLI runs. Not
    # with preexec_fn, which forks this process with every thread pool the earlier tests
    # started (OpenVINO's TBB pool crashed pytest itself in its fork handlers).
    sigint = (
        "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "runpy.run_module('padformer_edge', run_name='__main__', alter_sys=True)"
    )
    cmd = [sys.executable, "-c", sigint, "--log-format", "json", "train"]
    cmd += ["--config", str(recipe), "--data", str(data), "--out", str(run)]

    status, stdout, stderr = signal_once_resumable(cmd, _env(), run, signal.SIGINT, 120)
    assert status == 130, stderr[-2000:]
    assert "resume point written at step" in stdout and "--resume" in stdout
    stopped = [e for e in _events(stderr) if e["event"] == "train_stopped"]
    assert len(stopped) == 1 and 0 < stopped[0]["global_step"] < 80

    done = subprocess.run(
        [*cmd, "--resume"], env=_env(), capture_output=True, text=True, timeout=170
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "model written to" in done.stdout
    events = _events(done.stderr)
    first = events[0]
    assert first["event"] == "stage_started"
    assert first["start_step"] > 0 or first["stage"] == "cross_view"  # continued, not restarted
    assert events[-1]["event"] == "train_finished" and events[-1]["global_step"] == 80
    _, metadata = load_checkpoint(run / "model.safetensors")
    assert metadata["global_step"] == 80  # 8 images / batch 2 x 10 epochs x 2 stages


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{tmp}/nope"], "does not exist; pass --data"),
        (["--data", "{tmp}/empty"], "is empty; pass --data"),
        (["--data", "{tmp}/data", "--device", "tpu"], "unknown device 'tpu'"),
        (["--data", "{tmp}/data", "--resume"], "no resume point"),
    ],
)
def test_cli_user_errors_are_one_line_and_exit_2(
    setup, tmp_path: Path, monkeypatch, capsys, args: list[str], message: str
) -> None:
    _, recipe = setup
    (tmp_path / "empty").mkdir()
    argv = ["--config", str(recipe), "--out", str(tmp_path / "run")]
    err = refused_train_command(argv + [a.format(tmp=tmp_path) for a in args], monkeypatch, capsys)
    assert message in err


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
