"""``detection.runtime``: what it accepts, and the one-line errors when it cannot run."""

import sys

import pytest
from pydantic import ValidationError

from padformer_edge.deploy.export import export_onnx
from padformer_edge.deploy.runners import open_runner
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from tests.deploy.parity import tiny_model
from tests.detect_images import product_image


def test_torch_is_the_default_runtime():
    assert DetectionSettings().runtime == "torch"


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_exported_runtimes_refuse_what_they_cannot_run(runtime):
    with pytest.raises(ValidationError, match=f"runtime {runtime} runs the fp32 graphs"):
        DetectionSettings(runtime=runtime, precision="bf16")
    with pytest.raises(ValidationError, match="runtime openvino runs on the CPU; use device"):
        DetectionSettings(runtime="openvino", device="cuda")
    # onnxruntime may run on a CUDA GPU (onnxruntime-gpu; tests/deploy/test_onnxruntime_device.py)
    assert DetectionSettings(runtime="onnxruntime", device="cuda").device == "cuda"


@pytest.mark.parametrize(
    ("runtime", "module", "extra"),
    [("onnxruntime", "onnxruntime", "onnx"), ("openvino", "openvino", "openvino")],
)
def test_a_missing_runtime_is_one_sentence_with_the_install_command(
    runtime, module, extra, monkeypatch, tmp_path
):
    monkeypatch.setitem(sys.modules, module, None)  # import now raises ImportError
    with pytest.raises(UserError) as err:
        open_runner(tiny_model("tiny"), runtime, tmp_path)
    message = str(err.value)
    assert f"pip install 'padformer-edge[{extra}]'" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("runtime", "export", "profile_export"),
    [
        ("onnxruntime", "export MODEL --format onnx", "profile export NAME."),
        ("openvino", "export MODEL --format openvino", "profile export NAME --runtime openvino"),
    ],
)
def test_a_runtime_without_exported_graphs_says_how_to_make_them(runtime, export, profile_export):
    """Also what a profile set to an exported runtime hears at start-up without graphs:
    the detector given no runner and the opener given no folder say the same sentence."""
    settings = DetectionSettings(metric="auto", passes=2, runtime=runtime)
    with pytest.raises(UserError) as err:
        Detector(tiny_model("tiny"), [product_image(64, 64)], settings)
    assert f"padformer-edge {export}" in str(err.value)
    assert f"padformer-edge {profile_export}" in str(err.value)
    with pytest.raises(UserError) as opened:
        open_runner(tiny_model("tiny"), runtime, None)
    assert str(opened.value) == str(err.value)


def test_a_runner_with_the_torch_runtime_is_refused(tmp_path):
    """A runner handed to a torch detector would be silently ignored; it is refused."""
    model = tiny_model("tiny")
    export_onnx(model, tmp_path)
    runner = open_runner(model, "onnxruntime", tmp_path)
    with pytest.raises(ValueError, match="onnxruntime or openvino only"):
        Detector(
            model,
            [product_image(64, 64)],
            DetectionSettings(metric="auto", passes=2),
            runner=runner,
        )
