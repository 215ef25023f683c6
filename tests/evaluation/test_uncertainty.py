"""The paired bootstrap of an image-AUROC margin, checked against scikit-learn's AUROC."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from padformer_edge_training.data.layouts import ImageRecord
from padformer_edge_training.evaluation.protocol import ImageResult
from padformer_edge_training.evaluation.uncertainty import (
    IMAGES_REDRAWN,
    RENDERS_REDRAWN,
    image_auroc_margin,
    margin_over_renders,
    pair_wins,
)

EMPTY = np.zeros((1, 1))


def results(scores: dict[tuple[str, str, int], float]) -> list[ImageResult]:
    """(object, label, index) -> score, as the protocol's per-image results."""
    return [
        ImageResult(
            ImageRecord(Path(f"{obj}/{label}/{i}.png"), obj, "test", label),
            score,
            EMPTY,
            EMPTY.astype(bool),
            {},
        )
        for (obj, label, i), score in scores.items()
    ]


def random_scores(rng, objects=("duck", "mug"), goods=5, defects=15, shift=1.0):
    scores = {}
    for obj in objects:
        for i in range(goods):
            scores[(obj, "good", i)] = float(rng.normal())
        for i in range(defects):
            scores[(obj, "Stains", i)] = float(rng.normal(shift))
    return scores


def mean_auroc(scores) -> float:
    objects = sorted({obj for obj, _, _ in scores})
    values = []
    for obj in objects:
        keys = [k for k in scores if k[0] == obj]
        values.append(roc_auc_score([k[1] != "good" for k in keys], [scores[k] for k in keys]))
    return float(np.mean(values))


def test_margin_is_the_difference_of_the_mean_aurocs():
    rng = np.random.default_rng(3)
    first, second = random_scores(rng, shift=1.5), random_scores(rng, shift=0.5)
    second = {k: round(v, 1) for k, v in second.items()}  # ties count one half, as in sklearn
    interval = image_auroc_margin(results(first), results(second), resamples=200)
    expected = mean_auroc(first) - mean_auroc(second)
    assert interval.margin == pytest.approx(expected, abs=1e-12)
    assert interval.low <= interval.margin <= interval.high


def test_a_resample_weighted_by_draw_counts_is_the_auroc_of_the_redrawn_images():
    rng = np.random.default_rng(5)
    defect, good = rng.normal(1.0, size=7), np.round(rng.normal(size=4), 1)
    defect[0] = good[0]  # one tie
    defect_counts, good_counts = rng.multinomial(7, [1 / 7] * 7), rng.multinomial(4, [1 / 4] * 4)
    weighted = defect_counts @ pair_wins(defect, good) @ good_counts / (7 * 4)
    redrawn_d, redrawn_g = np.repeat(defect, defect_counts), np.repeat(good, good_counts)
    literal = roc_auc_score(
        [True] * len(redrawn_d) + [False] * len(redrawn_g), np.concatenate([redrawn_d, redrawn_g])
    )
    assert weighted == pytest.approx(literal, abs=1e-12)


def test_a_method_against_itself_has_a_zero_interval():
    scored = results(random_scores(np.random.default_rng(0)))
    interval = image_auroc_margin(scored, scored, resamples=100)
    assert (interval.margin, interval.low, interval.high) == (0.0, 0.0, 0.0)


def test_more_good_images_narrow_the_interval():
    rng = np.random.default_rng(1)

    def width(goods: int) -> float:
        first = random_scores(rng, goods=goods, defects=3 * goods, shift=1.5)
        second = random_scores(rng, goods=goods, defects=3 * goods, shift=1.0)
        interval = image_auroc_margin(results(first), results(second), resamples=1000)
        return interval.high - interval.low

    assert width(60) < width(5)


def test_different_image_sets_are_refused():
    rng = np.random.default_rng(2)
    first = random_scores(rng)
    second = dict(list(first.items())[:-1])
    with pytest.raises(ValueError, match="different images"):
        image_auroc_margin(results(first), results(second))


def test_one_render_gives_the_margin_and_interval_of_that_render():
    scored = [
        results(random_scores(np.random.default_rng(s), shift=m)) for s, m in ((4, 1.5), (6, 1))
    ]
    alone = image_auroc_margin(*scored, resamples=300, seed=7)
    pooled = margin_over_renders([tuple(scored)], resamples=300, seed=7)
    assert (pooled.margin, pooled.low, pooled.high) == (alone.margin, alone.low, alone.high)
    assert pooled.redrawn == RENDERS_REDRAWN and alone.redrawn == IMAGES_REDRAWN


def test_renders_that_disagree_widen_the_interval_each_render_calls_settled():
    """One render where the first method ranks every defect above every good image and the
    second ranks none, and one the other way round: each render's own interval is a single
    point, the pooled margin is zero and its interval spans both signs."""
    rng = np.random.default_rng(8)
    separated = {**random_scores(rng, shift=0.0)}
    separated = {k: v + (100.0 if k[1] != "good" else 0.0) for k, v in separated.items()}
    inverted = {k: -v for k, v in separated.items()}
    renders = [
        (results(separated), results(inverted)),
        (results(inverted), results(separated)),
    ]
    for pair in renders:
        own = image_auroc_margin(*pair, resamples=200)
        assert own.low == own.high == own.margin
    pooled = margin_over_renders(renders, resamples=400)
    assert pooled.margin == pytest.approx(0.0, abs=1e-12)
    assert pooled.low == pytest.approx(-1.0) and pooled.high == pytest.approx(1.0)


def test_the_margin_over_renders_is_their_mean_and_needs_one():
    rng = np.random.default_rng(9)
    pairs = [
        (results(random_scores(rng, shift=s)), results(random_scores(rng, shift=0.5)))
        for s in (0.5, 1.0, 2.0)
    ]
    each = [image_auroc_margin(*pair, resamples=50).margin for pair in pairs]
    pooled = margin_over_renders(pairs, resamples=500)
    assert pooled.margin == pytest.approx(float(np.mean(each)), abs=1e-12)
    assert pooled.low <= pooled.margin <= pooled.high
    assert pooled.brief().count("[") == 1
    with pytest.raises(ValueError, match="at least one render"):
        margin_over_renders([])
