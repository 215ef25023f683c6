"""The nearest-reference search: batched (CUDA's) against blocked (the CPU's), and the
detector's metrics batched over the images of one call against one image at a time."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from padformer_edge.detect.images import resize_square, to_unit_tensor
from padformer_edge.detect.parity import PARITY_RTOL, parity_gap, verdicts_agree
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.distance_search import (
    SEARCH_BLOCKS,
    ReferenceBank,
    batch_reference_distances,
    batched_best_cosines,
    best_cosines,
    blocked_best_cosines,
    reference_banks,
    resolve_search,
)
from padformer_edge.model.padformer import build_model
from tests.detect_images import product_image, with_defect
from tests.model.test_model_edge import SMALL_EDGE

CHANNELS = 40
# A cosine of two unit float32 vectors of C channels, summed in any order, is within
# C * eps of the exact value (|error| <= C u sum|x_i y_i| and the sum is at most 1, u =
# eps / 2, with as much again for the rows' own unit-length rounding); a maximum is
# 1-Lipschitz, so both searches' maxima lie within twice that of each other.
SEARCH_BOUND = 2 * CHANNELS * float(torch.finfo(torch.float32).eps)


def unit_rows(count: int, seed: int) -> torch.Tensor:
    return F.normalize(torch.randn(count, CHANNELS, generator=torch.Generator().manual_seed(seed)))


def test_the_search_is_blocked_on_a_cpu_batched_on_cuda_and_can_be_forced() -> None:
    assert resolve_search("auto", torch.device("cpu")) == "blocked"
    assert resolve_search("auto", torch.device("cuda")) == "batched"
    assert resolve_search("batched", torch.device("cpu")) == "batched"
    assert resolve_search("blocked", torch.device("cuda")) == "blocked"
    with pytest.raises(ValueError, match="search 'fast' is unknown"):
        resolve_search("fast", torch.device("cpu"))


@pytest.mark.parametrize("budget", [1 << 30, 100_000])  # one product; several of 625 rows
def test_the_batched_search_finds_the_blocked_maxima(budget: int) -> None:
    # more query rows than one block and a bank longer than one block, both ragged
    cells = unit_rows(SEARCH_BLOCKS.query_rows * 2 + 77, seed=0)
    upright = SEARCH_BLOCKS.bank_rows + 13
    bank = ReferenceBank(unit_rows(4 * upright, seed=1), upright)
    blocked = blocked_best_cosines(cells, bank)
    batched = batched_best_cosines(cells, bank, budget)
    for one, other in zip(blocked, batched, strict=True):
        assert one is not None and other is not None and one.shape == other.shape
        torch.testing.assert_close(other, one, rtol=0, atol=SEARCH_BOUND)
    assert torch.all(blocked[1] >= blocked[0])  # the turned rows only add candidates
    plain = ReferenceBank(bank.cells[:upright], upright)
    assert batched_best_cosines(cells, plain, budget)[1] is None
    torch.testing.assert_close(
        best_cosines(cells, plain, "batched")[0], blocked[0], rtol=0, atol=SEARCH_BOUND
    )


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_model("edge", **SMALL_EDGE).eval()


@pytest.fixture(scope="module")
def references() -> list[np.ndarray]:
    return [product_image(80, 120, seed=s) for s in range(3)]


@pytest.fixture(scope="module")
def queries() -> list[np.ndarray]:
    """Three queries of two sizes, one with a pasted defect."""
    return [
        product_image(80, 120, seed=1),
        with_defect(product_image(80, 120, seed=2), (30, 40, 12, 12)),
        product_image(64, 50, seed=3),
    ]


def test_one_batched_search_for_a_call_equals_a_blocked_search_per_query(
    model, references, queries
) -> None:
    cpu = torch.device("cpu")
    banks = reference_banks(model, [to_unit_tensor(r, cpu) for r in references], 1, turns=True)
    unit = [to_unit_tensor(q, cpu).unsqueeze(0) for q in queries]
    size = model.config.img_size
    with torch.inference_mode():
        targets = model.target_features(
            model.normalize(torch.cat([resize_square(q, size) for q in unit]))
        )
        sizes = [tuple(q.shape[:2]) for q in queries]
        batched = batch_reference_distances(model, unit, targets, banks, sizes, "batched")
        blocked = batch_reference_distances(model, unit, targets, banks, sizes, "blocked")
    for one, other, shape in zip(batched, blocked, sizes, strict=True):
        assert set(one) == set(other) == {(1, False), (1, True)}
        for key in one:
            # upsampling takes convex combinations of cells: the bound carries over
            assert one[key].shape == shape
            torch.testing.assert_close(one[key], other[key], rtol=0, atol=SEARCH_BOUND)


def per_image(detector: Detector, images: list[np.ndarray]) -> list:
    return [detector.detect([image])[0] for image in images]


def assert_same_detections(together: list, alone: list, floor: float = 0.0) -> None:
    """Equal up to the rounding of the map's own magnitude: a batch of several images may
    run the CNN (and the comparator) in another summation order than a batch of one, as in
    ``test_batching_does_not_change_a_querys_result``; ``floor`` is the search's own
    bound in the map's units (a query that is a reference has distances near 0)."""
    for joint, single in zip(together, alone, strict=True):
        scale = max(float(np.abs(single.anomaly_map).max()), floor / 1e-5)
        np.testing.assert_allclose(
            joint.anomaly_map, single.anomaly_map, rtol=1e-5, atol=1e-5 * scale
        )
        assert joint.score == pytest.approx(single.score, rel=1e-5, abs=1e-5 * scale)


@pytest.mark.parametrize("metric", ["distance", "fused"])
@pytest.mark.parametrize("search", ["batched", "blocked"])
def test_a_call_scores_each_image_as_it_scores_alone(
    model, references, queries, metric: str, search: str
) -> None:
    settings = DetectionSettings(passes=2, max_batch=8, device="cpu", metric=metric)
    detector = Detector(model, references, settings)
    detector.metric.search = search
    together = detector.detect(queries)
    alone = per_image(detector, queries)
    if search == "blocked":  # the CPU's way: each query keeps the bits it gets alone
        for joint, single in zip(together, alone, strict=True):
            assert joint.score == single.score
            np.testing.assert_array_equal(joint.anomaly_map, single.anomaly_map)
    weight = max(mix.reference_weight for mix in detector.metric.mixes)
    assert_same_detections(together, alone, weight * SEARCH_BOUND)
    assert together[1].score > together[0].score  # the pasted square is seen


def test_the_parity_gap_is_relative_to_the_cpu_map_and_reads_scores_too(
    model, references, queries
) -> None:
    settings = DetectionSettings(passes=2, device="cpu", metric="distance")
    cpu = Detector(model, references, settings).detect(queries)
    assert parity_gap(cpu, cpu) == 0.0 and verdicts_agree(cpu, cpu, cpu[1].score / 2)
    scale = float(np.abs(cpu[1].anomaly_map).max())
    moved = [replace(cpu[0]), replace(cpu[1], score=cpu[1].score + scale * 0.01), cpu[2]]
    assert parity_gap(cpu[:2], moved[:2]) == pytest.approx(0.01, rel=1e-3)
    assert parity_gap(cpu[:2], moved[:2]) > PARITY_RTOL
    # a verdict may flip only for a score within the bound of the threshold
    flipped = [replace(cpu[1], score=cpu[1].score * 0.9)]
    assert not verdicts_agree(cpu[1:2], flipped, cpu[1].score * 0.95)
    assert verdicts_agree(cpu[1:2], flipped, cpu[1].score * (1 - PARITY_RTOL / 2))
