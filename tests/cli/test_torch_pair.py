"""torchvision of another release than torch: a command that builds the model says so in
one sentence naming both versions and the fix, never with torchvision's traceback.

The installed pair matches, so the mismatch is staged where it shows: a ``torchvision``
package put first on the path whose operator registrations fail as a build for another
torch fails (``operator torchvision::nms does not exist``); timm imports it as it
imports the real one."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np

from padformer_edge.cli.torch_pair import mismatch_sentence
from tests.cli_process import run_cli

NMS = "operator torchvision::nms does not exist"


def _stale_torchvision(folder: Path) -> Path:
    package = folder / "torchvision"
    package.mkdir(parents=True)
    init = "import torch\nfrom torchvision import _meta_registrations\n"
    (package / "__init__.py").write_text(init)
    (package / "_meta_registrations.py").write_text(f"raise RuntimeError({NMS!r})\n")
    return folder


def test_a_command_that_builds_the_model_names_the_pair_and_the_fix(tmp_path: Path) -> None:
    references = tmp_path / "references"
    references.mkdir()
    rng = np.random.default_rng(0)
    for i in range(3):
        cv2.imwrite(str(references / f"r{i}.png"), rng.integers(0, 255, (64, 64, 3), np.uint8))
    fake = _stale_torchvision(tmp_path / "path")
    repo = Path(__file__).resolve().parents[2]
    env = {"PYTHONPATH": f"{fake}{os.pathsep}{repo}", "PADFORMER_EDGE_STATE_DIR": str(tmp_path)}
    done = run_cli("profile", "create", "duck", "--references", str(references), env=env)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    [line] = done.stderr.strip().splitlines()
    assert NMS in line and "constraints/torch-cpu.txt" in line
    from importlib import metadata

    assert f"torchvision {metadata.version('torchvision')}" in line
    assert f"torch {metadata.version('torch')}" in line
    assert not (tmp_path / "profiles" / "duck").exists()


def _raised(source: str, filename: str) -> BaseException:
    try:
        exec(compile(source, filename, "exec"), {})
    except RuntimeError as err:
        return err
    raise AssertionError("the source raised nothing")


def test_only_an_error_while_torchvision_loads_is_the_pair(tmp_path: Path) -> None:
    loading = _raised(f"raise RuntimeError({NMS!r})", "/site/torchvision/_meta_registrations.py")
    assert NMS in (mismatch_sentence(loading) or "")
    # a torchvision call a command made that fails is that command's own error
    inside = _raised(
        "exec(compile(\"def f():\\n raise RuntimeError('bad')\\n\", "
        "'/site/torchvision/ops/boxes.py', 'exec'), g := {})\ng['f']()\n",
        "/site/caller.py",
    )
    assert mismatch_sentence(inside) is None
    assert mismatch_sentence(ValueError("operator torchvision::nms")) is None
