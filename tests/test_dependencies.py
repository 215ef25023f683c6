"""The line PC's base install: every dependency bounded, and the daemon's code path free
of the training, rendering and evaluation extras."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib

from tests.cli_process import REPO

# Pillow is not here: timm pulls in torchvision, which imports it, on every install.
EXTRAS_ONLY = ("scipy", "sklearn", "pybullet", "trimesh", "onnxruntime", "onnx", "openvino")
LINE_PC_MODULES = (
    "padformer_edge.cli.app",
    "padformer_edge.daemon.service",
    "padformer_edge.daemon.worker",
    "padformer_edge.profiles.calibrate",
    "padformer_edge.profiles.verdicts",
    "padformer_edge.detect.service",
)


def requirements() -> list[str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        listed += [r for r in extra if not r.startswith("padformer-edge")]
    return listed


def test_every_dependency_has_an_upper_bound_on_its_major_version() -> None:
    unbounded = [r for r in requirements() if not re.search(r"<\s*\d", r)]
    assert unbounded == []


def test_the_extras_are_what_the_line_pc_leaves_out() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    base = " ".join(project["dependencies"])
    for package in ("pybullet", "trimesh", "scipy", "scikit-learn", "pillow"):
        assert package not in base
    extras = project["optional-dependencies"]
    assert {"torch", "line", "train", "synth", "eval", "demo", "dev", "lite2", "onnx"} <= set(
        extras
    )
    assert "openvino" in extras
    # the tests need all, the PostgreSQL driver too (a machine with a server runs those)
    everything = "padformer-edge[torch,train,synth,eval,mqtt,postgresql,lite2,onnx,openvino]"
    assert everything in extras["dev"]
    for package in ("torch", "timm", "kornia", "onnx", "openvino"):  # a line install chooses
        assert not re.search(rf"(^| ){package}[>=<]", base)
    assert any(r.startswith("onnxruntime") for r in extras["line"])
    assert not any(r.startswith(("torch", "padformer-edge[torch")) for r in extras["line"])
    # the line on OpenVINO: its runtime alone, no torch and no onnxruntime
    assert [r.split(">")[0] for r in extras["line-openvino"]] == ["openvino"]
    assert "lite2" not in base  # until validation chooses EfficientNet-Lite2


def test_the_daemon_path_imports_no_extra() -> None:
    probe = (
        "import importlib, json, sys\n"
        f"for name in {LINE_PC_MODULES!r}: importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in {EXTRAS_ONLY!r} if m in sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, check=True
    )
    assert json.loads(done.stdout) == []
