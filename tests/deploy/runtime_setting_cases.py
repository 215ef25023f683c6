"""``detection.runtime``: what it accepts, and the one-line errors when it cannot run."""

import sys

import pytest
from pydantic import ValidationError

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
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


def test_a_missing_onnxruntime_is_one_sentence_with_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import now raises ImportError
    settings = DetectionSettings(passes=2, runtime="onnxruntime")
    with pytest.raises(UserError) as err:
        Detector(tiny_model("tiny"), [product_image(64, 64)], settings, exported=tmp_path)
    message = str(err.value)
    assert "pip install 'padformer-edge[onnx]'" in message
    assert "\n" not in message


def test_a_missing_openvino_is_one_sentence_with_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "openvino", None)  # import now raises ImportError
    settings = DetectionSettings(passes=2, runtime="openvino")
    with pytest.raises(UserError) as err:
        Detector(tiny_model("tiny"), [product_image(64, 64)], settings, exported=tmp_path)
    message = str(err.value)
    assert "the openvino runtime needs the openvino package" in message
    assert "pip install 'padformer-edge[openvino]'" in message
    assert "\n" not in message


def test_openvino_without_exported_graphs_says_how_to_make_them():
    """Also what a profile set to openvino hears at start-up: it stores no IR yet."""
    settings = DetectionSettings(passes=2, runtime="openvino")
    with pytest.raises(UserError, match="padformer-edge export MODEL --format openvino") as err:
        Detector(tiny_model("tiny"), [product_image(64, 64)], settings)
    assert "profile export NAME --runtime openvino" in str(err.value)


def test_onnxruntime_without_exported_graphs_says_how_to_make_them():
    settings = DetectionSettings(passes=2, runtime="onnxruntime")
    with pytest.raises(UserError, match="padformer-edge export MODEL --format onnx"):
        Detector(tiny_model("tiny"), [product_image(64, 64)], settings)
