"""Exported graphs against the torch model, in onnxruntime and in OpenVINO: every preset's
tiny model, with the decoder's ``isolate_masked`` switch too, reference counts and pass
batches the export never saw. One ``--format openvino`` export per case serves both
runtimes (it holds the ONNX graphs and their IR)."""

import json
import shutil

import numpy as np
import onnx
import pytest
import torch

from padformer_edge.deploy.export import MANIFEST, export_onnx
from padformer_edge.deploy.graphs import QUERY_GRAPH
from padformer_edge.deploy.onnx_runner import OnnxRunner
from padformer_edge.deploy.openvino_export import export_openvino
from padformer_edge.deploy.openvino_runner import OpenVinoRunner
from padformer_edge.deploy.runners import open_runner
from padformer_edge.detect.masks import mask_indices
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from tests.deploy.parity import CASES, float32_bound, relative_error, tiny_model
from tests.detect_images import product_image, with_defect

SCORE_RTOL = 1e-4
RUNNERS = {"onnxruntime": OnnxRunner, "openvino": OpenVinoRunner}


@pytest.fixture(scope="module", params=list(CASES))
def exported(request, tmp_path_factory):
    """(model, folder of its exported graphs) per case, exported once per module."""
    model = tiny_model(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    export_openvino(model, folder)
    return model, folder


@pytest.fixture(scope="module")
def tiny_export(tmp_path_factory):
    """The tiny case alone, for the refusals (which do not depend on the preset)."""
    model = tiny_model("tiny")
    folder = tmp_path_factory.mktemp("tiny-refusals")
    export_onnx(model, folder)
    return model, folder


def test_graphs_are_valid_onnx_and_the_manifest_names_them(exported):
    model, folder = exported
    manifest = json.loads((folder / MANIFEST).read_text())
    assert manifest["config"]["isolate_masked"] == model.config.isolate_masked
    for name in manifest["graphs"]:
        onnx.checker.check_model(onnx.load(str(folder / name)))
    query_inputs = [i.name for i in onnx.load(str(folder / QUERY_GRAPH)).graph.input]
    assert query_inputs == [
        "query",
        "ids_keep",
        "ids_restore",
        "ref_tokens",
        *manifest["term_names"],
        *manifest["reference_outputs"][1:],
    ]
    reads_targets = model.reads_reference_features
    assert manifest["reference_outputs"] == ["features", "ref_targets"][: 1 + reads_targets]


def test_ir_files_are_recorded_in_the_manifest(exported):
    _, folder = exported
    manifest = json.loads((folder / MANIFEST).read_text())
    assert sorted(manifest["openvino"]["graphs"]) == sorted(
        f"{graph}.{suffix}"
        for graph in ("query", "reference_terms", "references")
        for suffix in ("bin", "xml")
    )


@pytest.mark.parametrize("runtime", list(RUNNERS))
@pytest.mark.parametrize("references, rows", [(1, 1), (5, 7)])
def test_reconstructions_within_the_float32_bound(exported, references, rows, runtime):
    """Exported with 2 references and 2 rows; run with other counts of both."""
    model, folder = exported
    size = model.config.img_size
    gen = torch.Generator().manual_seed(references * 10 + rows)
    refs = torch.randn(references, 3, size, size, generator=gen)
    query = torch.randn(rows, 3, size, size, generator=gen)
    masks = model.random_mask(rows, gen)
    with torch.no_grad():
        cache = model.encode_references(refs[None])
        expected = model.reconstruct_all(query, cache, masks)
    runner = RUNNERS[runtime](folder, model)
    features, targets = runner.encode_references(refs.numpy())
    runner.use_features(features, targets)
    pixels, predicted = runner.reconstruct(query.numpy(), *mask_indices(masks))
    bound = float32_bound(model)
    assert relative_error(features, cache.features.numpy()) < bound
    if model.reads_reference_features:
        assert relative_error(targets, cache.targets.numpy()) < bound
    else:
        assert targets is None
    assert relative_error(pixels, expected.pixels.numpy()) < bound
    if model.config.cnn_tokens:
        assert relative_error(predicted, expected.features.numpy()) < bound
    else:
        assert predicted is None


@pytest.mark.parametrize("runtime", list(RUNNERS))
def test_detector_scores_and_verdicts_match_torch(exported, runtime):
    """The whole detection: scores within 1e-4 relative, maps within the float32 bound,
    and the same verdict for every image at a threshold between the scores."""
    model, folder = exported
    references = [product_image(70, 90, seed=s) for s in range(3)]
    good = product_image(70, 90, seed=11)
    queries = [good, with_defect(good, (20, 30, 14, 14)), product_image(70, 90, seed=12)]
    queries.append(with_defect(queries[2], (40, 10, 12, 20)))
    # 3 passes in batches of 4: chunks that split an image's passes, and a short last one
    settings = DetectionSettings(metric="auto", passes=3, max_batch=4, device="cpu")
    by_torch = Detector(model, references, settings).detect(queries)
    onnx_settings = settings.replace(runtime=runtime)
    runner = open_runner(model, runtime, folder)
    by_onnx = Detector(model, references, onnx_settings, runner=runner).detect(queries)
    torch_scores = np.array([d.score for d in by_torch])
    onnx_scores = np.array([d.score for d in by_onnx])
    np.testing.assert_allclose(onnx_scores, torch_scores, rtol=SCORE_RTOL, atol=0)
    bound = float32_bound(model)
    for ours, theirs in zip(by_onnx, by_torch, strict=True):
        assert relative_error(ours.anomaly_map, theirs.anomaly_map) < bound
    ordered = np.sort(torch_scores)
    threshold = (ordered[1] + ordered[2]) / 2
    assert ordered[1] < threshold < ordered[2]  # two images each side: the check can fail
    assert list(onnx_scores > threshold) == list(torch_scores > threshold)


def test_runner_refuses_graphs_of_other_weights(tiny_export):
    _, folder = tiny_export
    with pytest.raises(UserError, match="exported from other weights"):
        OnnxRunner(folder, tiny_model("tiny", seed=1))


def test_runner_refuses_graphs_of_other_settings_with_the_same_weights(tmp_path):
    """isolate_masked changes the graph, not the weights: the config must match too."""
    model = tiny_model("edge")
    export_onnx(model, tmp_path)
    with pytest.raises(UserError, match="other model settings"):
        OnnxRunner(tmp_path, model.reconfigured(isolate_masked=True))


def test_graphs_exported_with_the_fused_settings_in_the_model_config_still_run(tmp_path):
    """Earlier exports recorded the fused score's ``fused_*`` fields in the manifest's
    model config; they never changed a graph, so such an export still matches."""
    from padformer_edge.model.checkpoint import LEGACY_SCORING_FIELDS

    model = tiny_model("edge")
    export_onnx(model, tmp_path)
    manifest = json.loads((tmp_path / MANIFEST).read_text())
    manifest["config"].update(dict.fromkeys(LEGACY_SCORING_FIELDS))
    manifest["config"]["fused_lab_weight"] = 0.5
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    OnnxRunner(tmp_path, model)


def test_runner_refuses_a_graph_changed_since_export(tiny_export, tmp_path):
    model, folder = tiny_export
    copy = tmp_path / "graphs"
    shutil.copytree(folder, copy)
    with (copy / QUERY_GRAPH).open("ab") as graph:
        graph.write(b"\0")
    with pytest.raises(UserError, match="differs from its sha256"):
        OnnxRunner(copy, model)


def test_a_folder_without_a_manifest_says_how_to_export(tiny_export, tmp_path):
    model, _ = tiny_export
    with pytest.raises(UserError, match="padformer-edge export MODEL --format onnx"):
        OnnxRunner(tmp_path, model)


def test_openvino_refuses_an_onnx_only_export_and_names_the_format(tiny_export):
    model, folder = tiny_export
    with pytest.raises(UserError, match="--format openvino"):
        OpenVinoRunner(folder, model)


def test_openvino_refuses_an_ir_file_changed_since_export(exported, tmp_path):
    model, folder = exported
    copy = tmp_path / "graphs"
    shutil.copytree(folder, copy)
    with (copy / "query.bin").open("ab") as weights:
        weights.write(b"\0")
    with pytest.raises(UserError, match=r"query\.bin is missing or differs from its sha256"):
        OpenVinoRunner(copy, model)


@pytest.mark.parametrize("runtime", list(RUNNERS))
def test_a_warping_stn_resamples_as_torch_does(tmp_path, runtime):
    """Every tiny model's STN starts as the identity, where any resampling formula gives
    the one-hot rows exactly; with random affine weights each reference, pass and layer is
    warped its own way, so the exported graphs' own bilinear weights (``corner_weights``)
    and separate key and value resampling are held to torch's too."""
    model = tiny_model("edge")
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for layer in model.decoder.layers:
            weight = layer.stn.fc[-1].weight
            weight.copy_(0.05 * torch.randn(weight.shape, generator=gen))
    export_openvino(model, tmp_path)
    size = model.config.img_size
    refs = torch.randn(3, 3, size, size, generator=gen)
    query = torch.randn(4, 3, size, size, generator=gen)
    masks = model.random_mask(4, gen)
    with torch.no_grad():
        expected = model.reconstruct_all(query, model.encode_references(refs[None]), masks)
        still = tiny_model("edge")  # the same weights with the identity warp
        unwarped = still.reconstruct_all(query, still.encode_references(refs[None]), masks)
    bound = float32_bound(model)
    # the warp changes the reconstruction: parity below is not the identity's exact rows
    assert relative_error(unwarped.pixels.numpy(), expected.pixels.numpy()) > 10 * bound
    runner = RUNNERS[runtime](tmp_path, model)
    runner.use_features(*runner.encode_references(refs.numpy()))
    pixels, predicted = runner.reconstruct(query.numpy(), *mask_indices(masks))
    assert relative_error(pixels, expected.pixels.numpy()) < bound
    assert relative_error(predicted, expected.features.numpy()) < bound
