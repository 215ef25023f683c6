"""The ``distance`` metric: the nearest-reference distance alone, scored with no pass."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.masks import hidden_weights
from padformer_edge.detect.readout import Readout
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import signature_text
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.distance_metric import DistanceMetric
from padformer_edge.methods.padformer.fused_metric import FusedMetric
from padformer_edge.methods.padformer.fused_scoring import JobScoring, ScoringConfig
from padformer_edge.methods.padformer.metrics import build_metric, scoring_signature
from padformer_edge.methods.padformer.paper_metrics import PredictedFeatureMetric
from padformer_edge.model.padformer import build_model
from tests.detect_images import product_image, with_defect
from tests.model.test_model_edge import SMALL_EDGE

PASSES = 4
# A pass mean of PASSES equal float32 maps is the map itself up to the rounding of the sum
# and the division: a few units in the last place, relative.
MEAN_OF_EQUALS_RTOL = 4 * PASSES * float(torch.finfo(torch.float32).eps)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("edge", **SMALL_EDGE).eval()


@pytest.fixture(scope="module")
def references() -> list[np.ndarray]:
    return [product_image(80, 120, seed=s) for s in range(3)]


@pytest.fixture(scope="module")
def queries() -> list[np.ndarray]:
    return [
        product_image(80, 120, seed=1),
        with_defect(product_image(80, 120, seed=2), (30, 40, 12, 12)),
    ]


def _settings(metric: str) -> DetectionSettings:
    return DetectionSettings(passes=PASSES, max_batch=3, device="cpu", metric=metric)


@pytest.mark.parametrize("size", [None, (480, 960)], ids=["render", "frame-blurred-shrunk"])
def test_distance_equals_the_fused_metric_with_the_reconstruction_weighted_out(
    model, references, queries, size
) -> None:
    """The distance read on its cells (each magnification's, carried on the grid its blur
    needs) is the fused metric with the reconstruction weighted out, which draws the
    distance at the query's size and reads it there through the passes: on a render, and
    on a frame whose blur runs shrunk (the map then stays on the shrunk grid)."""
    if size is not None:
        queries = [
            cv2.resize(query, size[::-1], interpolation=cv2.INTER_LINEAR) for query in queries
        ]
    distance = Detector(model, references, _settings("distance"))
    assert distance.metric_name == "distance" and not distance.reads_passes
    fused = Detector(model, references, _settings("fused"))
    plain = distance.metric
    weighted_out = FusedMetric(
        model,
        plain.scoring,
        [to_unit_tensor(image, torch.device("cpu")) for image in references],
        reconstruction_weight=0.0,
    )
    weighted_out.map_readout = Readout(False, weighted_out.map_readout.sigma)
    weighted_out.score_readout = Readout(False, weighted_out.score_readout.sigma)
    fused.metric = weighted_out
    for alone, through_passes in zip(distance.detect(queries), fused.detect(queries), strict=True):
        assert len(through_passes.pass_mean_error) == PASSES and alone.pass_mean_error == []
        # the distance weighs each magnification's cells before their mean, the fused mix
        # weighs the mean: a rounding or two more, of the map's largest value at most
        top = float(np.abs(through_passes.anomaly_map).max())
        if size is not None:
            assert max(alone.anomaly_map.shape) < max(size) // 2
        np.testing.assert_allclose(
            frame_map(alone.anomaly_map, through_passes.anomaly_map.shape),
            through_passes.anomaly_map,
            rtol=MEAN_OF_EQUALS_RTOL,
            atol=MEAN_OF_EQUALS_RTOL * top,
        )
        assert alone.score == pytest.approx(through_passes.score, rel=MEAN_OF_EQUALS_RTOL)


def test_distance_runs_no_reconstruction(model, references, queries, monkeypatch) -> None:
    detector = Detector(model, references, _settings("distance"))

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the distance metric ran a reconstruction pass")

    monkeypatch.setattr(model, "reconstruct_all", refuse)
    (result,) = detector.detect(queries[:1])
    assert np.isfinite(result.score)
    assert result.anomaly_map.shape == (80, 120)


def test_distance_reads_the_references(model, references, queries) -> None:
    good = Detector(model, references, _settings("distance")).detect(queries)
    black = [np.zeros_like(references[0])] * len(references)
    unseen = Detector(model, black, _settings("distance")).detect(queries)
    for read, nothing in zip(good, unseen, strict=True):
        assert nothing.score > read.score


def test_distance_names_its_scoring_without_a_reconstruction_mix(model) -> None:
    metric = build_metric("distance", model)
    assert isinstance(metric, DistanceMetric)
    signature = scoring_signature("distance", metric)
    assert "lab_weight" not in signature["map"] and "lab_weight" not in signature["score"]
    assert (
        not signature["map"]["consistency_filter"] and not signature["score"]["consistency_filter"]
    )
    text = signature_text(signature)
    assert text.startswith("distance; map: reference weight ")
    assert "LAB" not in text and "filtered" not in text
    assert signature != scoring_signature("fused", build_metric("fused", model))


def test_a_job_that_weighs_the_references_zero_still_reads_them() -> None:
    model = build_model("edge", **SMALL_EDGE)
    model.scoring = {"map": {"reference_weight": 0.0}}
    metric = DistanceMetric(model)
    assert metric.scoring.map.reference_weight == 1.0 and metric.mixes[0].reference_weight == 1.0
    given = ScoringConfig(score=JobScoring(reference_weight=0.0))  # a detection's own
    assert DistanceMetric(model, given).mixes[-1].reference_weight == 1.0


def test_distance_is_refused_for_pixel_models() -> None:
    with pytest.raises(UserError, match="distance metric needs a model with CNN tokens"):
        build_metric("distance", build_model("tiny"))


def test_a_model_that_scores_hidden_patches_only_zeroes_its_visible_errors() -> None:
    model = build_model("edge", **SMALL_EDGE, score_masked_cells=True).eval()
    plain = PredictedFeatureMetric(build_model("edge", **SMALL_EDGE).eval())
    hidden_only = PredictedFeatureMetric(model)
    generator = torch.Generator().manual_seed(0)
    query = torch.rand(1, 3, 64, 64, generator=generator)
    target = hidden_only.target(query, model.normalize(query))
    features = torch.randn(3, *target.shape[1:], generator=generator)
    masks = model.random_mask(3, torch.Generator().manual_seed(1))
    size = (64, 64)  # the model's own size: one patch is a 16 px square of the map
    full = plain.errors(target, query, size, features)
    kept = hidden_only.errors(target, query, size, features, masks.float())
    patch = model.config.patch_size
    hidden = masks.view(3, 1, 4, 4).repeat_interleave(patch, 2).repeat_interleave(patch, 3)[:, 0]
    # bilinear upsampling of the cell map mixes neighbouring cells at patch borders only:
    # a patch's inner pixels (away from its edge) read its own cells alone
    inner = torch.zeros(64, 64, dtype=torch.bool)
    for start in range(0, 64, patch):
        inner[start + 4 : start + patch - 4, :] = True
    inner = inner & inner.T
    assert torch.all(kept[~hidden & inner] == 0)
    assert torch.equal(kept[hidden & inner], full[hidden & inner])
    with pytest.raises(ValueError, match="pass their weights"):
        hidden_only.errors(target, query, size, features)
    signature = scoring_signature("fused", build_metric("fused", model))
    assert signature["hidden_patches_only"]
    assert signature_text(signature).endswith("; feature error on hidden patches only")
    assert not scoring_signature("fused", build_metric("fused", plain.model))["hidden_patches_only"]


def test_hidden_weights_make_the_pass_mean_a_mean_over_the_passes_that_hid_a_patch() -> None:
    masks = torch.tensor([[True, False, True], [True, False, False], [False, False, True]])
    errors = torch.tensor([[1.0, 5.0, 2.0], [3.0, 5.0, 9.0], [7.0, 5.0, 4.0]])
    weighted = hidden_weights(masks) * errors
    # patch 0: passes 0 and 1 hid it (1 and 3); patch 1: never hidden; patch 2: 2 and 4
    assert weighted.mean(dim=0).tolist() == [2.0, 0.0, 3.0]


def test_detection_scores_hidden_patches_only_end_to_end(references, queries) -> None:
    torch.manual_seed(0)
    model = build_model("edge", **SMALL_EDGE, score_masked_cells=True).eval()
    results = Detector(model, references, _settings("fused")).detect(queries)
    assert all(np.isfinite(r.score) for r in results)
