"""The Detector against a test double whose reconstruction is the clean product."""

import numpy as np
import pytest
import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.detector import Detector
from tests.detect_double import CleanReconstructor
from tests.detect_images import product_image, with_defect

DEFECT = (40, 60, 14, 14)  # top, left, height, width in a 96 x 128 picture


@pytest.fixture
def clean() -> np.ndarray:
    return product_image(96, 128)


def make_detector(clean: np.ndarray, **options) -> Detector:
    settings = DetectionSettings(**{"device": "cpu", "metric": "auto", **options})
    return Detector(CleanReconstructor(), [clean, clean, clean, clean], settings)


@pytest.mark.parametrize("metric", ["lab", "rgb", "feature"])
@pytest.mark.parametrize("schedule", ["random", "balanced"])
def test_map_peaks_inside_a_pasted_defect_and_outscores_the_clean_query(clean, metric, schedule):
    detector = make_detector(clean, metric=metric, schedule=schedule, seed=4)
    defective, good = detector.detect([with_defect(clean, DEFECT), clean])
    assert defective.anomaly_map.shape == (96, 128)
    assert defective.anomaly_map.dtype == np.float32
    row, col = np.unravel_index(defective.anomaly_map.argmax(), defective.anomaly_map.shape)
    top, left, h, w = DEFECT
    # Feature errors exist per patch only: allow the peak anywhere in a patch touching the
    # defect (a patch spans 96/4 rows and 128/4 columns here). Colour errors are per pixel.
    dy, dx = (24, 32) if metric == "feature" else (0, 0)
    assert top - dy <= row < top + h + dy and left - dx <= col < left + w + dx
    assert defective.score == pytest.approx(float(defective.anomaly_map.max()))
    assert defective.score > 10 * max(good.score, 1e-6)


def test_identical_calls_give_identical_bits(clean):
    query = with_defect(clean, DEFECT)
    first = make_detector(clean, seed=9).detect([query])[0]
    second = make_detector(clean, seed=9).detect([query])[0]
    assert first.score == second.score
    assert np.array_equal(first.anomaly_map, second.anomaly_map)


def test_references_are_encoded_once_across_calls(clean):
    model = CleanReconstructor()
    detector = Detector(
        model, [clean, clean, clean], DetectionSettings(metric="auto", passes=5, device="cpu")
    )
    detector.detect([clean, clean])
    detector.detect([clean])
    assert model.references_encoded == 3


def test_batching_does_not_change_a_querys_result(clean):
    queries = [with_defect(clean, DEFECT), product_image(70, 50, seed=2)]
    together = make_detector(clean, max_batch=64).detect(queries)
    alone = make_detector(clean, max_batch=4).detect(queries[1:])
    # Other batch shapes may sum in another order: rounding of the map's own magnitude.
    scale = float(np.abs(alone[0].anomaly_map).max())
    np.testing.assert_allclose(
        together[1].anomaly_map, alone[0].anomaly_map, rtol=1e-5, atol=1e-5 * scale
    )


@pytest.mark.parametrize("shape", [(32, 32), (45, 200), (301, 77), (4, 9)])
def test_map_has_the_query_resolution_for_any_size_and_aspect_ratio(clean, shape):
    query = product_image(*shape, seed=1)
    detection = make_detector(clean, passes=4).detect([query])[0]
    assert detection.anomaly_map.shape == shape
    assert len(detection.pass_mean_error) == len(detection.pass_max_error) == 4
    assert set(detection.timings) == {"prepare", "reconstruct", "score", "total"}


def test_bad_inputs_are_user_errors(clean):
    with pytest.raises(UserError, match="no reference images"):
        Detector(CleanReconstructor(), [])
    with pytest.raises(UserError, match="differ in size"):
        Detector(CleanReconstructor(), [clean, product_image(50, 50)])
    with pytest.raises(UserError, match="query 0 must be an RGB uint8 array"):
        make_detector(clean).detect([clean.astype(np.float32)])
    with pytest.raises(UserError, match="query 0 is only 10x3 pixels"):
        make_detector(clean).detect([product_image(3, 10)])
    with pytest.raises(UserError, match="needs a CUDA device"):
        make_detector(clean, precision="bf16", device="cpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error shown without a GPU")
def test_cuda_without_a_gpu_is_a_user_error(clean):
    with pytest.raises(UserError, match="no CUDA GPU is visible"):
        make_detector(clean, device="cuda")
