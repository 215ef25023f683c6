"""``runtimes.resolve_device``: the one rule detection and training choose a device by.

A CPU-only torch supplies every answer but one: whether a GPU is visible, which the GPU
cases get from ``torch.cuda.is_available`` patched to say yes (a ``torch.device`` is only
a name until a tensor goes there, so no GPU is touched).
"""

from __future__ import annotations

from typing import get_args

import pytest
import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.devices.runtimes import DEVICES, resolve_device
from padformer_edge.errors import UserError


@pytest.fixture
def gpu_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.mark.usefixtures("no_gpu")
def test_auto_and_cpu_are_the_cpu_without_a_gpu() -> None:
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto", local_rank=1) == torch.device("cpu")


@pytest.mark.usefixtures("gpu_visible")
def test_auto_is_the_current_gpu_or_the_ranks_own() -> None:
    # detection: torch's current GPU, named without an index as before
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda") == torch.device("cuda")
    # a torchrun process trains on the GPU of its local rank
    assert resolve_device("auto", local_rank=2) == torch.device("cuda", 2)
    assert resolve_device("cuda", local_rank=2) == torch.device("cuda", 2)
    # a named GPU stays itself whatever the rank
    assert resolve_device("cuda:3", local_rank=2) == torch.device("cuda", 3)
    assert resolve_device("cpu", local_rank=2) == torch.device("cpu")


@pytest.mark.usefixtures("no_gpu")
@pytest.mark.parametrize("name", ["cuda", "cuda:1"])
def test_a_gpu_asked_for_without_one_is_one_sentence(name: str) -> None:
    with pytest.raises(UserError) as err:
        resolve_device(name)
    assert str(err.value).startswith(f"device '{name}' was asked for but no CUDA GPU is visible")
    assert "--device cpu" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.usefixtures("gpu_visible")
@pytest.mark.parametrize("name", ["tpu", "cuda:", "cuda:x", "CUDA", ""])
def test_an_unknown_name_is_refused_even_with_a_gpu(name: str) -> None:
    with pytest.raises(UserError, match=f"unknown device '{name}'; use auto, cpu, cuda or cuda:N"):
        resolve_device(name)


@pytest.mark.usefixtures("gpu_visible")
def test_every_name_the_detection_and_daemon_settings_take_is_resolved() -> None:
    """The settings' device names are the rule's own list: none of them is unknown."""
    from padformer_edge.daemon.settings import WorkerConfig

    assert get_args(DetectionSettings.model_fields["device"].annotation) == DEVICES
    worker = get_args(WorkerConfig.model_fields["device"].annotation)
    assert get_args(worker[0]) == DEVICES
    assert {resolve_device(name).type for name in DEVICES} == {"cpu", "cuda"}
