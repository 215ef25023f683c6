"""Metrics against scikit-learn and a slow, literal AUPRO computation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import ndimage
from sklearn.metrics import roc_auc_score

from padformer_edge_training.evaluation.metrics import aupro, image_auroc, pixel_auroc, trapezoid_to


def slow_aupro(masks, maps, thresholds, limit=0.3):
    """The definition, step by step: binarise at each threshold, measure every region."""
    regions = []
    for mask in masks:
        labelled, count = ndimage.label(mask, structure=np.ones((3, 3)))
        regions += [(len(regions), labelled == i) for i in range(1, count + 1)]
    normal_total = sum(int((~m).sum()) for m in masks)
    points = []
    for t in sorted(thresholds, reverse=True):
        binary = [a >= t for a in maps]
        fp = sum(int((b & ~m).sum()) for b, m in zip(binary, masks, strict=True))
        overlaps = []
        for image_index, mask in enumerate(masks):
            labelled, count = ndimage.label(mask, structure=np.ones((3, 3)))
            for i in range(1, count + 1):
                region = labelled == i
                overlaps.append((binary[image_index] & region).sum() / region.sum())
        points.append((fp / normal_total, float(np.mean(overlaps))))
    fpr, pro = zip(*[(0.0, 0.0), *points], strict=True)
    fpr, pro = np.array(fpr), np.array(pro)
    area = 0.0
    for i in range(1, len(fpr)):
        x0, x1, y0, y1 = fpr[i - 1], fpr[i], pro[i - 1], pro[i]
        if x0 >= limit:
            break
        if x1 > limit:
            y1 = y0 + (y1 - y0) * (limit - x0) / (x1 - x0)
            x1 = limit
        area += (x1 - x0) * (y0 + y1) / 2
    return area / limit


def generated_masks(rng: np.random.Generator, count: int, size: int = 24) -> list[np.ndarray]:
    masks = []
    for index in range(count):
        mask = np.zeros((size, size), dtype=bool)
        for _ in range(index % 3):  # images with 0, 1 and 2 blobs of random sizes
            y, x = rng.integers(0, size - 6, 2)
            h, w = rng.integers(1, 7, 2)
            mask[y : y + h, x : x + w] = True
        masks.append(mask)
    return masks


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_aupro_equals_the_slow_definition_on_quantised_maps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    masks = generated_masks(rng, 7)
    # Quantised scores: a grid over every level is exactly the set of distinct thresholds.
    maps = [
        (rng.integers(0, 60, m.shape) + 25 * m * rng.integers(0, 2, m.shape)) / 100.0 for m in masks
    ]
    levels = np.unique(np.concatenate([a.ravel() for a in maps]))
    assert aupro(masks, maps) == pytest.approx(slow_aupro(masks, maps, levels), abs=1e-3)


def test_aupro_matches_a_fine_threshold_grid_on_continuous_maps() -> None:
    rng = np.random.default_rng(5)
    masks = generated_masks(rng, 6)
    maps = [rng.random(m.shape) + 0.4 * m for m in masks]
    grid = np.linspace(0.0, 1.4, 3001)
    assert aupro(masks, maps) == pytest.approx(slow_aupro(masks, maps, grid), abs=1e-3)


def test_aupro_is_one_for_perfect_and_zero_for_inverted_maps() -> None:
    masks = generated_masks(np.random.default_rng(3), 6)
    perfect = [m.astype(float) for m in masks]
    assert aupro(masks, perfect) == pytest.approx(1.0)
    assert aupro(masks, [1.0 - p for p in perfect]) == pytest.approx(0.0, abs=1e-9)


def test_aupro_weights_regions_not_pixels() -> None:
    mask = np.zeros((20, 20), dtype=bool)
    mask[0:10, 0:10] = True  # a large region, missed
    mask[15, 15] = True  # a one-pixel region, found
    amap = np.zeros((20, 20))
    amap[15, 15] = 1.0
    # One of two regions found at FPR 0, so PRO is 0.5 there whatever the areas; the next
    # threshold (0) takes every pixel, and the curve runs straight to (1, 1): PRO at the
    # 0.3 limit is 0.65, and the normalised area is (0.5 + 0.65) / 2.
    assert aupro([mask], [amap]) == pytest.approx((0.5 + 0.65) / 2, abs=1e-9)


def test_aupro_is_nan_without_defects() -> None:
    assert math.isnan(aupro([np.zeros((4, 4), bool)], [np.random.default_rng(0).random((4, 4))]))


def test_trapezoid_interpolates_at_the_limit() -> None:
    x, y = np.array([0.0, 0.2, 0.6]), np.array([0.0, 1.0, 1.0])
    assert trapezoid_to(x, y, 0.3) == pytest.approx(0.1 + 0.1)


def test_rocs_equal_scikit_learn() -> None:
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200).astype(bool)
    scores = rng.random(200) + 0.3 * labels
    assert image_auroc(labels, scores) == pytest.approx(roc_auc_score(labels, scores))
    masks = generated_masks(rng, 5)
    maps = [rng.random(m.shape) + 0.5 * m for m in masks]
    pooled = np.concatenate([m.ravel() for m in masks])
    expected = roc_auc_score(pooled, np.concatenate([a.ravel() for a in maps]))
    assert pixel_auroc(masks, maps) == pytest.approx(expected)
    assert pixel_auroc(masks, [m.astype(float) for m in masks]) == pytest.approx(1.0)
    assert image_auroc([False, True], [1.0, 0.0]) == 0.0
    assert math.isnan(image_auroc([True, True], [0.2, 0.4]))


def test_rank_auroc_counts_ties_as_scikit_learn_does() -> None:
    """Scores with many ties (a quantised map, a saturated score): each tied pair counts
    one half, so the rank formula and scikit-learn's ROC trapezoids must agree exactly."""
    rng = np.random.default_rng(4)
    for size in (2, 7, 50, 5000):
        labels = rng.integers(0, 2, size).astype(bool)
        labels[:2] = (True, False)  # both classes present
        scores = rng.integers(0, 4, size).astype(np.float32)
        assert image_auroc(labels, scores) == pytest.approx(
            roc_auc_score(labels, scores), abs=1e-12
        )
    assert image_auroc([True, False, True], [0.5, 0.5, 0.5]) == 0.5
