"""``padformer-edge export`` and ``detect --runtime onnxruntime`` from the command line."""

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from padformer_edge.cli.app import app
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import save_checkpoint
from tests.cli_process import run_cli
from tests.deploy.parity import tiny_model
from tests.detect.test_detect_cli import write_png
from tests.detect_images import product_image, with_defect


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_cli")
    save_checkpoint(root / "tiny.safetensors", tiny_model("tiny"), {"note": "random weights"})
    for seed in range(2):
        write_png(root / "refs" / f"good_{seed}.png", product_image(60, 80, seed=seed))
    good = product_image(60, 80, seed=9)
    write_png(root / "q" / "good.png", good)
    write_png(root / "q" / "bad.png", with_defect(good, (20, 30, 10, 10)))
    return root


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})


def scores(workspace, *extra: str) -> list[float]:
    result = invoke(
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--passes", "3", "--json", *extra,
        str(workspace / "q" / "good.png"), str(workspace / "q" / "bad.png"),
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return [row["score"] for row in json.loads(result.stdout)]  # one JSON array


def test_export_then_detect_with_onnxruntime_scores_as_torch(workspace):
    """Without --exported, detect reads the graphs beside the checkpoint (tiny-onnx/)."""
    out = workspace / "tiny-onnx"
    result = invoke(
        "export", str(workspace / "tiny.safetensors"), "--format", "onnx", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [
        "manifest.json", "query.onnx", "reference_terms.onnx", "references.onnx",
    ]  # fmt: skip
    by_torch = scores(workspace)
    by_onnx = scores(workspace, "--runtime", "onnxruntime")
    np.testing.assert_allclose(by_onnx, by_torch, rtol=1e-4, atol=0)
    assert by_onnx == scores(workspace, "--runtime", "onnxruntime", "--exported", str(out))


def test_export_openvino_then_detect_with_openvino_scores_as_torch(workspace):
    """Without --exported, detect --runtime openvino reads tiny-openvino/ beside the
    checkpoint, which also serves onnxruntime."""
    out = workspace / "tiny-openvino"
    result = invoke(
        "export", str(workspace / "tiny.safetensors"), "--format", "openvino", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    names = sorted(p.name for p in out.iterdir())
    assert [n for n in names if n.endswith((".xml", ".bin"))] == [
        "query.bin", "query.xml", "reference_terms.bin", "reference_terms.xml",
        "references.bin", "references.xml",
    ]  # fmt: skip
    by_torch = scores(workspace)
    by_openvino = scores(workspace, "--runtime", "openvino")
    np.testing.assert_allclose(by_openvino, by_torch, rtol=1e-4, atol=0)
    by_onnx = scores(workspace, "--runtime", "onnxruntime", "--exported", str(out))
    np.testing.assert_allclose(by_onnx, by_torch, rtol=1e-4, atol=0)


def test_export_openvino_without_openvino_is_one_sentence(workspace, tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "openvino", None)  # import now raises ImportError
    result = invoke(
        "export", str(workspace / "tiny.safetensors"), "--format", "openvino",
        "--out", str(tmp_path / "graphs"),
    )  # fmt: skip
    assert isinstance(result.exception, UserError)
    assert "pip install 'padformer-edge[openvino]'" in str(result.exception)
    assert not (tmp_path / "graphs").exists()  # refused before anything was written


@pytest.mark.parametrize(
    ("runtime", "export_format"), [("openvino", "openvino"), ("onnxruntime", "onnx")]
)
def test_detect_with_an_exported_runtime_and_no_export_says_how_to_make_one(
    runtime, export_format, workspace, tmp_path
):
    result = invoke(
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--runtime", runtime, "--exported", str(tmp_path / "none"),
        str(workspace / "q" / "good.png"),
    )  # fmt: skip
    assert isinstance(result.exception, UserError)
    assert "padformer-edge export" in str(result.exception)
    assert f"--format {export_format}" in str(result.exception)


def test_exported_without_onnxruntime_is_refused(workspace, tmp_path):
    result = invoke(
        "detect", "-m", str(workspace / "tiny.safetensors"), "-r", str(workspace / "refs"),
        "--exported", str(tmp_path), str(workspace / "q" / "good.png"),
    )  # fmt: skip
    assert isinstance(result.exception, UserError)
    assert "--exported is read only with --runtime onnxruntime or openvino" in str(result.exception)


def test_export_of_a_missing_checkpoint_is_refused(tmp_path):
    result = invoke("export", str(tmp_path / "missing.safetensors"), "--out", str(tmp_path))
    assert isinstance(result.exception, UserError)
    assert "does not exist" in str(result.exception)


def test_an_unsupported_format_is_one_line_and_status_2(workspace, tmp_path):
    model = str(workspace / "tiny.safetensors")
    result = run_cli("export", model, "--format", "tflite", "--out", str(tmp_path))
    assert result.returncode == 2
    assert "--format 'tflite' is not supported yet; choose one of onnx, openvino." in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
