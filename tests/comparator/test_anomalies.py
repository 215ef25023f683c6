"""Image-space anomalies: exact masks, inside the part, blobs with nothing thin, thin and
small kinds as thin and as small as they say, seeded, the default kinds drawn as before."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from padformer_edge_training.comparator.anomalies import (
    ALL_KINDS,
    BLOB_KINDS,
    DEFAULT_KINDS,
    MIN_WIDTH,
    SMALL_KINDS,
    blob_anomaly,
    blob_mask,
    make_anomaly,
)
from padformer_edge_training.comparator.anomaly_base import (
    BACKGROUND_TOLERANCE,
    CHANGE_TOLERANCE,
    MIN_SMALL_PIXELS,
    perlin,
    silhouette,
)
from padformer_edge_training.comparator.small_bodies import BODY_SIZES, SPECK_SIZES
from padformer_edge_training.comparator.thin_anomalies import MAX_STROKE_WIDTH

THIN_KINDS = ("curve", "polyline", "crack", "scratch")
SIZES = (128, 320)
SEEDS = range(6)


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


def change(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return np.abs(after.astype(np.int16) - before).max(-1)


def the_part(image: np.ndarray) -> np.ndarray:
    """The silhouette by its definition, written out here independently of the module."""
    return np.abs(image.astype(np.int16) - 255).max(-1) > BACKGROUND_TOLERANCE


def drawn(kind: str, size: int, seed: int):
    """The first kept anomaly of ``kind`` from a generator seeded ``seed``, and how many
    draws were rejected before it (a kind that rejects everything fails the caller)."""
    image, donor = part_on_white(seed, size), part_on_white(seed + 50, size)
    rng = np.random.default_rng(seed)
    for rejected in range(20):
        anomaly = make_anomaly(image, [donor], rng, kinds=[kind])
        if anomaly is not None:
            return image, anomaly, rejected
    raise AssertionError(f"{kind} kept nothing in 20 draws at {size} px")


def inscribed(mask: np.ndarray) -> float:
    """The largest distance from a mask pixel to a pixel outside the mask."""
    padded = np.pad(mask.astype(np.uint8), 1)
    return float(cv2.distanceTransform(padded, cv2.DIST_L2, cv2.DIST_MASK_PRECISE).max())


def extent(mask: np.ndarray) -> int:
    ys, xs = np.nonzero(mask)
    return int(max(np.ptp(ys), np.ptp(xs))) + 1


def test_the_kinds_are_named_once_and_the_default_is_the_blob_kinds():
    assert DEFAULT_KINDS == BLOB_KINDS == ("texture", "colour", "blur", "contrast")
    assert (*BLOB_KINDS, *SMALL_KINDS) == ALL_KINDS
    assert len(set(ALL_KINDS)) == len(ALL_KINDS)
    assert set(THIN_KINDS) | {"pasted", "speckle"} == set(SMALL_KINDS)


@pytest.mark.parametrize("kind", BLOB_KINDS)
def test_the_mask_is_exactly_the_pixels_that_changed(kind):
    image, donor = part_on_white(1), part_on_white(2)
    rng = np.random.default_rng(3)
    anomaly = None
    while anomaly is None:
        anomaly = make_anomaly(image, [donor], rng, kinds=[kind])
    moved = change(image, anomaly.image)
    assert anomaly.kind == kind
    assert anomaly.mask.any()
    assert (moved[anomaly.mask] > CHANGE_TOLERANCE).all()
    assert (moved[~anomaly.mask] <= CHANGE_TOLERANCE).all()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", list(SMALL_KINDS))
def test_a_small_kind_changes_exactly_its_mask_inside_the_part(kind, size):
    rejected = 0
    for seed in SEEDS:
        image, anomaly, misses = drawn(kind, size, seed)
        rejected += misses
        assert anomaly.kind == kind
        assert np.array_equal(anomaly.mask, change(image, anomaly.image) > CHANGE_TOLERANCE)
        assert anomaly.mask.sum() >= MIN_SMALL_PIXELS
        assert not (anomaly.mask & ~the_part(image)).any(), "changed outside the part"
    assert rejected < len(SEEDS), f"{kind} rejects more draws than it keeps"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("kind", THIN_KINDS)
def test_a_thin_kind_is_thin(kind, size):
    for seed in SEEDS:
        _, anomaly, _ = drawn(kind, size, seed)
        assert inscribed(anomaly.mask) <= MAX_STROKE_WIDTH


@pytest.mark.parametrize("size", SIZES)
def test_a_faint_line_moves_no_colour_by_more_than_40_levels(size):
    for kind in ("curve", "polyline"):
        for seed in SEEDS:
            image, anomaly, _ = drawn(kind, size, seed)
            assert change(image, anomaly.image).max() <= 40


@pytest.mark.parametrize("size", SIZES)
def test_a_crack_only_darkens(size):
    for seed in SEEDS:
        image, anomaly, _ = drawn("crack", size, seed)
        assert (anomaly.image <= image).all()


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("kind", "sizes"), [("pasted", BODY_SIZES), ("speckle", SPECK_SIZES)])
def test_a_small_body_is_3_to_its_largest_size_across(kind, sizes, size):
    for seed in SEEDS:
        _, anomaly, _ = drawn(kind, size, seed)
        assert 3 <= extent(anomaly.mask) <= sizes[1]


def test_a_pasted_body_without_donors_is_a_noise_texture():
    image = part_on_white(9, 192)
    rng = np.random.default_rng(10)
    kept = [a for a in (make_anomaly(image, [], rng, ["pasted"]) for _ in range(10)) if a]
    assert kept and all(a.kind == "pasted" for a in kept)


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_the_same_seed_makes_the_same_anomaly(kind):
    for seed in (8, 9):
        _, first, first_misses = drawn(kind, 160, seed)
        _, second, second_misses = drawn(kind, 160, seed)
        assert first_misses == second_misses
        assert np.array_equal(first.image, second.image)
        assert np.array_equal(first.mask, second.mask)


def test_the_default_kinds_draw_the_blob_first_then_the_kind():
    """The order every seeded draw of the blob kinds has had since they were written: the
    blob from the generator, then the kind; a recipe naming no kinds trains on those."""
    for seed in range(8):
        image, donor = part_on_white(seed, 128 + 64 * (seed % 2)), part_on_white(seed + 20)
        rng = np.random.default_rng(seed)
        anomaly = make_anomaly(image, [donor], rng)
        replay = np.random.default_rng(seed)
        again = blob_anomaly(image, [donor], replay)
        assert (anomaly is None) == (again is None)
        if anomaly is None or again is None:
            continue
        assert np.array_equal(anomaly.image, again.image) and anomaly.kind == again.kind
        assert rng.integers(1 << 30) == replay.integers(1 << 30), "a draw was added or lost"
        order = np.random.default_rng(seed)
        blob = blob_mask(silhouette(image), order)
        assert blob is not None and not (anomaly.mask & ~blob).any()
        assert anomaly.kind == BLOB_KINDS[int(order.integers(len(BLOB_KINDS)))]


def test_a_mixed_list_draws_every_kind_it_names_and_no_other():
    image, donor = part_on_white(11, 160), part_on_white(12, 160)
    rng = np.random.default_rng(13)
    named = ["crack", "pasted", "blur"]
    seen = {a.kind for a in (make_anomaly(image, [donor], rng, named) for _ in range(40)) if a}
    assert seen == set(named)


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="unknown anomaly kind 'cracks'"):
        make_anomaly(part_on_white(0), [], np.random.default_rng(0), ["crack", "cracks"])


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_a_part_too_small_gets_none(kind):
    image = np.full((128, 128, 3), 255, np.uint8)
    image[60:62, 60:62] = 0  # four pixels: fewer than any kind may change
    assert MIN_SMALL_PIXELS > 4
    rng = np.random.default_rng(0)
    assert all(make_anomaly(image, [image], rng, [kind]) is None for _ in range(5))
    blank = np.full((128, 128, 3), 255, np.uint8)
    assert make_anomaly(blank, [blank], rng, [kind]) is None


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


def test_the_silhouette_is_every_pixel_away_from_the_background_in_some_channel():
    rng = np.random.default_rng(14)
    image = rng.integers(0, 256, (40, 50, 3)).astype(np.uint8)
    background = (10, 200, 30)
    image[:10] = background
    red, green, blue = background
    image[10:12] = (red + BACKGROUND_TOLERANCE, green, blue - BACKGROUND_TOLERANCE)
    expected = np.abs(image.astype(np.int16) - background).max(-1) > BACKGROUND_TOLERANCE
    assert np.array_equal(silhouette(image, background), expected)
    assert not silhouette(image, background)[:12].any()
    assert np.array_equal(silhouette(part_on_white(15)), the_part(part_on_white(15)))


def test_the_noise_is_smooth_and_spans_both_signs():
    field = perlin((64, 64), 4, np.random.default_rng(0))
    assert field.min() < -0.2 and field.max() > 0.2
    assert np.abs(np.diff(field, axis=0)).max() < 0.25


def test_the_light_list_of_kinds_names_every_kind_drawn() -> None:
    """`config check` validates a recipe's kinds from ``anomaly_kinds`` (no OpenCV there):
    its names are exactly the kinds ``anomalies`` draws."""
    from padformer_edge_training.comparator import anomaly_kinds
    from padformer_edge_training.comparator.anomalies import BLOB_KINDS, SMALL_KINDS

    assert tuple(SMALL_KINDS) == anomaly_kinds.SMALL_KIND_NAMES
    assert (*BLOB_KINDS, *SMALL_KINDS) == anomaly_kinds.ALL_KINDS
