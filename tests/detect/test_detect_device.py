"""fp32 on CUDA means fp32: the TF32 switches set where a device is resolved for detection.

torch's switches can be set and read without a GPU, so the function that applies them is
checked here on a CPU-only torch with a CUDA device named; ``detection_device`` is checked
through ``auto`` with ``torch.cuda.is_available`` answering yes, the one part of a GPU this
machine cannot supply. Which device a name means is ``runtimes.resolve_device``'s
(tests/devices/test_device_choice.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import yaml

from padformer_edge.daemon.settings import load_daemon_config
from padformer_edge.detect.device import apply_float32, detection_device
from padformer_edge.detect.tf32 import allow_tf32, tf32_allowed


def switches() -> tuple[bool, bool]:
    return torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32


def set_switches(value: bool) -> None:
    torch.backends.cudnn.allow_tf32 = value
    torch.backends.cuda.matmul.allow_tf32 = value


@pytest.fixture(autouse=True)
def restore_switches() -> Iterator[None]:
    """The switches and the process's choice are process-wide: put them back."""
    before, chosen = switches(), tf32_allowed()
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = before
    allow_tf32(chosen)


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda", 1)])
def test_a_cuda_device_gets_both_tf32_switches_off_by_default(device) -> None:
    set_switches(True)  # torch's own default turns cuDNN's on
    apply_float32(device)
    assert switches() == (False, False)


def test_tf32_chosen_for_the_process_turns_both_switches_on() -> None:
    set_switches(False)
    allow_tf32(True)
    apply_float32("cuda")
    assert switches() == (True, True)
    allow_tf32(False)
    apply_float32("cuda")
    assert switches() == (False, False)


@pytest.mark.parametrize("value", [True, False])
def test_a_cpu_device_leaves_the_switches_as_they_are(value: bool) -> None:
    """A CPU detector built beside a GPU one must not undo the GPU's process-wide mode."""
    set_switches(value)
    allow_tf32(not value)
    apply_float32("cpu")
    assert detection_device("cpu").type == "cpu"
    assert switches() == (value, value)


def test_resolving_a_cuda_device_applies_the_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The one place detection chooses its device sets the switches: a ``Detector`` on
    CUDA (``detect``, ``profile`` commands, the daemon) never runs with cuDNN's TF32."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    set_switches(True)
    assert detection_device("auto").type == "cuda"
    assert switches() == (False, False)
    allow_tf32(True)
    assert detection_device("cuda").type == "cuda"
    assert switches() == (True, True)


def test_the_daemon_config_keeps_tf32_off_unless_asked(tmp_path: Path) -> None:
    config = {"cameras": [{"name": "cam", "path": str(tmp_path), "profile": "p"}]}
    path = tmp_path / "daemon.yaml"
    path.write_text(yaml.safe_dump(config))
    assert load_daemon_config(path, []).worker.allow_tf32 is False
    config["worker"] = {"allow_tf32": True}
    path.write_text(yaml.safe_dump(config))
    assert load_daemon_config(path, []).worker.allow_tf32 is True
