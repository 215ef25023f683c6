"""Image-space anomalies: exact masks, blobs inside the part, nothing thin, seeded."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from padformer_edge_training.comparator.anomalies import (
    CHANGE_TOLERANCE,
    KINDS,
    MIN_WIDTH,
    blob_mask,
    make_anomaly,
    perlin,
    silhouette,
)


def part_on_white(seed: int, size: int = 128) -> np.ndarray:
    """A textured disc and box on a white background, as the renderer's views are."""
    rng = np.random.default_rng(seed)
    image = np.full((size, size, 3), 255, np.uint8)
    texture = rng.integers(40, 200, (size, size, 3)).astype(np.uint8)
    texture = cv2.GaussianBlur(texture, (0, 0), 2)
    mask = np.zeros((size, size), np.uint8)
    cv2.circle(mask, (size // 2, size // 2), size // 3, 1, -1)
    cv2.rectangle(mask, (size // 5, size // 5), (size // 2, size // 2), 1, -1)
    image[mask > 0] = texture[mask > 0]
    return image


@pytest.mark.parametrize("kind", KINDS)
def test_the_mask_is_exactly_the_pixels_that_changed(kind):
    image, donor = part_on_white(1), part_on_white(2)
    rng = np.random.default_rng(3)
    anomaly = None
    while anomaly is None:
        anomaly = make_anomaly(image, [donor], rng, kinds=[kind])
    change = np.abs(anomaly.image.astype(np.int16) - image).max(-1)
    assert anomaly.kind == kind
    assert anomaly.mask.any()
    assert (change[anomaly.mask] > CHANGE_TOLERANCE).all()
    assert (change[~anomaly.mask] <= CHANGE_TOLERANCE).all()


def test_a_blob_lies_inside_the_part_and_keeps_no_thin_strand():
    image = part_on_white(4)
    part = silhouette(image)
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (MIN_WIDTH, MIN_WIDTH))
    rng = np.random.default_rng(5)
    for _ in range(20):
        blob = blob_mask(part, rng)
        assert blob is not None
        assert not (blob & ~part).any()
        opened = cv2.morphologyEx(blob.astype(np.uint8), cv2.MORPH_OPEN, disc).astype(bool)
        assert np.array_equal(opened, blob), "a strand thinner than the disc survived"


def test_the_same_seed_makes_the_same_anomaly():
    image, donor = part_on_white(6), part_on_white(7)
    first = make_anomaly(image, [donor], np.random.default_rng(8))
    second = make_anomaly(image, [donor], np.random.default_rng(8))
    assert first is not None and second is not None
    assert np.array_equal(first.image, second.image) and np.array_equal(first.mask, second.mask)


def test_a_part_too_small_for_a_blob_gets_none():
    image = np.full((128, 128, 3), 255, np.uint8)
    image[60:63, 60:63] = 0
    assert make_anomaly(image, [], np.random.default_rng(0)) is None


def test_the_noise_is_smooth_and_spans_both_signs():
    field = perlin((64, 64), 4, np.random.default_rng(0))
    assert field.min() < -0.2 and field.max() > 0.2
    assert np.abs(np.diff(field, axis=0)).max() < 0.25
