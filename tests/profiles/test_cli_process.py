"""``profile`` commands as an operator runs them, each a real process: the exit status of
``test``, ``delete`` with and without ``--yes``, and ``calibrate --anomalous`` given the
parent folder ``synth`` writes (one folder per defect kind beside ``good``). Off a
terminal, ``calibrate`` and ``test`` report their progress as log lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from padformer_edge.profiles.create import create_profile
from padformer_edge.profiles.profile import list_profile_names, load_profile
from tests.cli_process import REPO, run_cli
from tests.profiles.conftest import FAST


@pytest.fixture
def root(tmp_path: Path, product: Path, checkpoint: Path) -> Path:
    folder = tmp_path / "profiles"
    create_profile(folder, "duck", checkpoint, product / "train" / "good", 2, FAST)
    return folder


def test_calibrate_takes_a_parent_of_defect_folders_and_test_sets_the_status(
    root: Path, product: Path, tmp_path: Path
) -> None:
    calibrated = run_cli(
        "profile", "calibrate", "duck", "--root", str(root), "--good",
        str(product / "test" / "good"), "--anomalous", str(product / "test"),
        "--target-fpr", "0.1",
    )  # fmt: skip
    assert calibrated.returncode == 0, calibrated.stderr
    kinds = [p for p in (product / "test").iterdir() if p.name != "good"]
    defects = sum(len(list(kind.glob("*.png"))) for kind in kinds)
    assert f"{defects} anomalous images: recall" in calibrated.stdout
    events = [json.loads(line) for line in calibrated.stderr.splitlines()]
    done = [e for e in events if e["event"] == "progress.done"]
    assert done and done[0]["job"] == "calibrating" and done[0]["done"] == done[0]["total"]

    images = sorted((product / "test" / "good").glob("*.png"))[:2]
    images += sorted((product / "test" / "Missing").glob("*.png"))[:2]
    base = ["profile", "test", "duck", *map(str, images), "--root", str(root), "--json"]
    tested = run_cli(*base, "-o", str(tmp_path / "hm"))
    verdicts = json.loads(tested.stdout)
    assert len(verdicts) == 4
    logged = [json.loads(line) for line in tested.stderr.splitlines()]
    done = [e for e in logged if e["event"] == "progress.done"]  # off a terminal: log lines
    assert [(e["job"], e["done"], e["total"]) for e in done] == [("testing", 4, 4)]
    assert tested.returncode == (1 if any(v["anomalous"] for v in verdicts) else 0)
    kept = run_cli(*base, "-o", str(tmp_path / "hm"), "--no-fail")
    assert kept.returncode == 0, kept.stderr


def test_delete_needs_yes_off_a_terminal_and_names_an_unknown_profile(root: Path) -> None:
    refused = run_cli("profile", "delete", "duck", "--root", str(root))
    assert refused.returncode == 2
    assert refused.stderr.strip() == (
        "error: deleting profile 'duck' needs confirmation; add --yes."
    )
    assert list_profile_names(root) == ["duck"]
    deleted = run_cli("profile", "delete", "duck", "--yes", "--root", str(root))
    assert deleted.returncode == 0, deleted.stderr
    assert list_profile_names(root) == [] and not list(root.iterdir())
    unknown = run_cli("profile", "delete", "duck", "--yes", "--root", str(root))
    assert unknown.returncode == 2
    assert "profile 'duck' does not exist under" in unknown.stderr
    assert "(known: none)" in unknown.stderr


def test_ctrl_c_on_calibrate_says_so_and_leaves_the_profile_as_it_was(
    root: Path, product: Path, tmp_path: Path
) -> None:
    """Issue 32: Ctrl-C on a long calibration exited 130 without a word. SIGINT once the
    first image is scored: one line saying what happened, status 130, and the profile
    still without a threshold."""
    many = tmp_path / "many-good"
    many.mkdir()
    source = sorted((product / "test" / "good").glob("*.png"))[0]
    for n in range(2000):  # hard links: a long job without the disk space
        os.link(source, many / f"{n:04d}.png")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "padformer_edge", "profile", "calibrate", "duck", "--root",
         str(root), "--good", str(many), "--target-fpr", "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert process.stderr is not None
    for line in process.stderr:  # until the first progress event: scoring has begun
        if line.startswith("{") and json.loads(line)["event"] == "progress":
            break
    else:
        raise AssertionError(f"no progress event before the end; status {process.wait()}")
    process.send_signal(signal.SIGINT)
    _, rest = process.communicate(timeout=120)
    assert process.returncode == 130, rest
    said = [line for line in rest.splitlines() if not line.startswith("{")]
    assert said == ["interrupted (Ctrl-C): the command stopped before it finished; run it again."]
    assert load_profile(root, "duck").threshold is None
