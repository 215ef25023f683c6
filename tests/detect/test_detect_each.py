"""``Detector.detect_each``: the one batching loop behind detect, calibrate, verdicts and
evaluation."""

from __future__ import annotations

import numpy as np

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from tests.detect_double import CleanReconstructor
from tests.detect_images import product_image, with_defect


def make(max_batch: int, passes: int = 4) -> Detector:
    clean = product_image(48, 64)
    settings = DetectionSettings(metric="auto", passes=passes, max_batch=max_batch, device="cpu")
    return Detector(CleanReconstructor(), [clean, clean], settings)


def queries(count: int) -> list[np.ndarray]:
    return [with_defect(product_image(48, 64, seed=i), (10, 10, 8, 8)) for i in range(count)]


def test_items_are_loaded_one_model_call_at_a_time_and_kept_in_order() -> None:
    detector = make(max_batch=8)  # 8 rows of 4 passes: two images per model call
    images = queries(5)
    events: list[str] = []

    def load(index: int) -> np.ndarray:
        events.append(f"load {index}")
        return images[index]

    seen = []
    for index, image, found in detector.detect_each(range(5), load):
        events.append(f"got {index}")
        seen.append(index)
        assert image is images[index]
        assert found.anomaly_map.shape == (48, 64)
    assert seen == [0, 1, 2, 3, 4]
    assert events[:4] == ["load 0", "load 1", "got 0", "got 1"]
    assert events[4:] == ["load 2", "load 3", "got 2", "got 3", "load 4", "got 4"]


def test_grouping_does_not_change_any_result() -> None:
    images = queries(3)
    grouped = [found for _, _, found in make(max_batch=8).detect_each(images)]
    alone = [make(max_batch=4).detect([image])[0] for image in images]
    for a, b in zip(grouped, alone, strict=True):
        np.testing.assert_allclose(a.anomaly_map, b.anomaly_map, rtol=1e-5, atol=1e-5)


def test_a_halved_model_batch_gives_smaller_groups() -> None:
    detector = make(max_batch=8)
    assert detector.images_per_call == 2
    detector.max_batch = 3  # what the daemon does after CUDA runs out of memory
    assert detector.images_per_call == 1


def test_evaluation_scores_through_the_same_loop_and_keeps_reconstructions() -> None:
    clean = product_image(48, 64)
    settings = DetectionSettings(metric="auto", passes=4, max_batch=8, device="cpu")
    scorer = PADFormerScorer(CleanReconstructor(), settings=settings)
    scorer.prepare([clean, clean])
    images = queries(3)
    scored = scorer.score(images)
    direct = Detector(CleanReconstructor(), [clean, clean], settings).detect(images)
    assert [s.score for s in scored] == [d.score for d in direct]
    size = CleanReconstructor().config.img_size
    for item in scored:
        assert item.comparison is not None
        assert item.comparison.shape == (size, size, 3) and item.comparison.dtype == np.uint8
