"""A demo that fails removes the temporary folder it made for itself; one given with
``--out`` stays. The failure is a real one a user meets early: torchvision of another
release than torch (tests/cli/test_torch_pair.py stages it), after the part is rendered
into the folder and before the daemon starts."""

from __future__ import annotations

import os
from pathlib import Path

from tests.cli.test_torch_pair import NMS, _stale_torchvision
from tests.cli_process import REPO, run_cli


def _failing_demo(tmp_path: Path, *args: str):
    temp = tmp_path / "tmp"
    temp.mkdir()
    fake = _stale_torchvision(tmp_path / "path")
    env = {
        "PYTHONPATH": f"{fake}{os.pathsep}{REPO}",
        "TMPDIR": str(temp),
        "PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state"),
    }
    return run_cli("demo", "--quick", *args, env=env, timeout=300), temp


def test_a_failed_demo_leaves_no_temporary_folder(tmp_path: Path) -> None:
    done, temp = _failing_demo(tmp_path)
    assert done.returncode == 2 and NMS in done.stderr, done.stderr
    assert "rendering" in done.stdout  # it got as far as writing into its folder
    assert [p.name for p in temp.iterdir() if p.name.startswith("padformer-edge-demo")] == []


def test_a_failed_demo_keeps_the_folder_it_was_given(tmp_path: Path) -> None:
    out = tmp_path / "demo-run"
    done, _ = _failing_demo(tmp_path, "--out", str(out))
    assert done.returncode == 2, done.stderr
    assert (out / "data").is_dir()
