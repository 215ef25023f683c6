"""Where exported graphs run: onnxruntime on the CPU, or on a CUDA GPU through
onnxruntime-gpu's CUDA provider; OpenVINO on the CPU. No GPU is here, so the CUDA branch
is checked against a stand-in for an onnxruntime build that has the provider; the CPU
build installed here is checked as it is."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import onnxruntime
import pytest

from padformer_edge.deploy.openvino_runner import OpenVinoRunner
from padformer_edge.deploy.sessions import (
    CUDA_PROVIDER,
    OnnxGraph,
    onnxruntime_providers,
    open_graphs,
)
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.line_detector import LineDetector
from padformer_edge.profiles.profile import load_profile
from tests.deploy.parity import tiny_model, tiny_onnx_profile

CPU = "CPUExecutionProvider"


def _build(*providers: str) -> SimpleNamespace:
    """The part of an onnxruntime module that names its execution providers."""
    return SimpleNamespace(get_available_providers=lambda: list(providers))


def test_a_build_with_cuda_runs_there_first_and_falls_back_to_the_cpu_per_operator():
    gpu_build = _build(CUDA_PROVIDER, CPU)
    assert onnxruntime_providers(gpu_build, "cuda") == [CUDA_PROVIDER, CPU]
    assert onnxruntime_providers(gpu_build, "auto") == [CUDA_PROVIDER, CPU]
    assert onnxruntime_providers(gpu_build, "cpu") == [CPU]


def test_a_build_without_cuda_stays_on_the_cpu_and_refuses_cuda_in_one_sentence():
    cpu_build = _build(CPU)
    assert onnxruntime_providers(cpu_build, "auto") == [CPU]
    assert onnxruntime_providers(cpu_build, "cpu") == [CPU]
    with pytest.raises(UserError, match="no CUDA provider; install onnxruntime-gpu") as err:
        onnxruntime_providers(cpu_build, "cuda")
    assert "\n" not in str(err.value)


def test_the_installed_onnxruntime_is_used_as_it_is():
    has_cuda = CUDA_PROVIDER in onnxruntime.get_available_providers()
    assert onnxruntime_providers(onnxruntime, "auto")[0] == (CUDA_PROVIDER if has_cuda else CPU)


def test_a_cuda_provider_that_does_not_start_is_an_error_not_a_silent_cpu_run(tmp_path):
    """onnxruntime-gpu without a usable GPU opens the session on the CPU and only logs
    it; a line that asked for ``cuda`` must be told."""

    class FellBack:
        def __init__(self, path: str, options: object, providers: list[str]) -> None:
            assert providers == [CUDA_PROVIDER, CPU]

        def get_providers(self) -> list[str]:
            return [CPU]

    gpu_build = SimpleNamespace(
        get_available_providers=lambda: [CUDA_PROVIDER, CPU],
        SessionOptions=onnxruntime.SessionOptions,
        InferenceSession=FellBack,
    )
    with pytest.raises(UserError, match=r"CUDA provider did not start for query\.onnx"):
        OnnxGraph(gpu_build, tmp_path / "query.onnx", threads=1, device="cuda")
    assert OnnxGraph(gpu_build, tmp_path / "query.onnx", threads=1, device="auto").device == "cpu"


def test_openvino_refuses_cuda_before_it_loads_anything(tmp_path: Path):
    with pytest.raises(UserError, match="openvino runtime, which runs on the CPU"):
        open_graphs("openvino", tmp_path, ["query.onnx"], 1, "hint", device="cuda")
    with pytest.raises(UserError, match="openvino runtime, which runs on the CPU"):
        OpenVinoRunner(tmp_path, tiny_model("edge"), device="cuda")


def test_a_profile_on_onnxruntime_runs_where_it_is_asked(tmp_path: Path):
    profile = load_profile(tiny_onnx_profile(tmp_path, max_batch=2), "part")
    detector = profile.build_detector(device="auto")
    assert isinstance(detector, LineDetector) and detector.device == "cpu"
    if CUDA_PROVIDER not in onnxruntime.get_available_providers():
        with pytest.raises(UserError, match="install onnxruntime-gpu"):
            profile.build_detector(device="cuda")
