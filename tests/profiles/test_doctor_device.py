"""``doctor``'s device line: the GPU torch will give the daemon, or the CPU, asked of torch
in a child process only where a GPU driver is loaded and a torch profile may use it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml

from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.profiles.create import create_profile
from padformer_edge.tools.device_check import check_device, driver_loaded, probe_torch_cuda
from tests.profiles.conftest import FAST

PATIENT_S = 900.0
H100 = {
    "torch": "2.11.0",
    "cuda": "13.0",
    "device": {"name": "NVIDIA H100", "total_bytes": 85 << 30},
}


@pytest.fixture
def profiles(tmp_path: Path, product: Path, checkpoint: Path) -> Path:
    root = tmp_path / "profiles"
    good = product / "train" / "good"
    create_profile(root, "auto", checkpoint, good, 2, FAST.replace(device="auto"))
    create_profile(root, "cpu", checkpoint, good, 2, FAST)
    # a profile made on a GPU PC: made here on the CPU, then set to cuda in its file
    made = create_profile(root, "gpu", checkpoint, good, 2, FAST).profile.folder
    text = yaml.safe_load((made / "profile.yaml").read_text())
    text["detection"]["device"] = "cuda"
    (made / "profile.yaml").write_text(yaml.safe_dump(text))
    return root


def line(*names: str, **worker: str) -> DaemonConfig:
    cams = [{"name": f"cam{i}", "path": "cam", "profile": n} for i, n in enumerate(names)]
    return DaemonConfig.model_validate({"cameras": cams, "worker": worker})


def finding(config: DaemonConfig, root: Path, seen: dict | None, driver: bool = True):
    asked: list[int] = []

    def probe() -> dict:
        asked.append(1)
        assert seen is not None, "the probe was not to be asked"
        return seen

    (found,) = check_device(config, root, probe=probe, has_driver=lambda: driver)
    return found, len(asked)


def test_a_gpu_torch_sees_is_named_with_its_memory(profiles: Path) -> None:
    found, asked = finding(line("auto", "gpu"), profiles, H100)
    assert found.ok and asked == 1
    assert found.detail == "NVIDIA H100, 85.0 GiB (torch 2.11.0, CUDA 13.0) for 'auto', 'gpu'"


def test_without_a_gpu_auto_is_the_cpu_and_cuda_is_a_problem(profiles: Path) -> None:
    none_seen = {"torch": "2.11.0+cpu", "cuda": None, "device": None}
    found, _ = finding(line("auto"), profiles, none_seen)
    assert found.ok and found.detail == "no CUDA device: the CPU (torch 2.11.0+cpu sees none)"
    found, _ = finding(line("auto", "gpu"), profiles, none_seen)
    assert not found.ok and "'gpu' ask for device cuda, but torch 2.11.0+cpu sees none" in (
        found.detail
    )
    assert "set worker.device: cpu" in found.detail
    # worker.device cpu overrides every profile: nothing to ask torch
    found, asked = finding(line("auto", "gpu", device="cpu"), profiles, None)
    assert found.ok and asked == 0 and found.detail == "the CPU for 'auto', 'gpu'"


def test_no_driver_means_no_torch_start(profiles: Path) -> None:
    found, asked = finding(line("auto"), profiles, None, driver=False)
    assert found.ok and asked == 0
    assert found.detail == "no CUDA device: the CPU (no GPU driver is loaded)"
    found, _ = finding(line("cpu"), profiles, None)
    assert found.detail == "the CPU for 'cpu'"


def test_a_probe_that_fails_is_a_problem_and_missing_profiles_are_left_to_their_check(
    profiles: Path,
) -> None:
    found, _ = finding(line("auto", "absent"), profiles, {"error": "the probe exited 1: boom"})
    assert not found.ok
    assert found.detail == "cannot tell which device 'auto' will use: the probe exited 1: boom"
    assert list(check_device(line("absent"), profiles)) == []


def test_the_child_probe_sees_what_torch_here_sees() -> None:
    # the suite's loaded 2-core runs took over doctor's 120 s for a child's first torch
    # import; what is checked here is the child's answer, so it is given all the time it needs
    seen = probe_torch_cuda(timeout_s=PATIENT_S)
    assert "error" not in seen, seen["error"]
    assert seen["torch"] == torch.__version__
    assert (seen["device"] is not None) == torch.cuda.is_available()
    assert driver_loaded([Path("/")]) and not driver_loaded([Path("/no/such/driver")])


def test_a_probe_past_its_time_is_one_sentence_for_doctor(profiles: Path) -> None:
    # no Python starts, let alone imports torch, within a millisecond
    seen = probe_torch_cuda(timeout_s=0.001)
    assert seen["error"].startswith("torch did not answer within ")
    assert "(a busy PC or a torch import that hangs)" in seen["error"]
    found, _ = finding(line("auto"), profiles, seen)
    assert not found.ok and found.detail.startswith("cannot tell which device 'auto' will use: ")
    assert "run doctor again when the PC is quieter" in found.detail
