"""How far an image-AUROC margin between two methods could move with other test images.

A quality table has few good images per object (five in the main table): ranking one of
them above the defects moves that object's AUROC by several points, the size of the
margins the tables are read for. A paired, stratified bootstrap redraws test sets of the
same shape (per object, as many good and as many defective images, with replacement),
scores both methods from the scores they already gave, and reports the spread of the
mean-over-objects difference. Paired, because both methods saw the same images with the
same references: what varies together cancels, so the interval is that of the margin,
narrower than the two methods' own intervals would suggest. The references are not
redrawn (each object keeps the set the table drew), so the interval is a lower bound on
the spread a fresh table would show. ``margin_over_renders`` widens it to what a fresh
render would show: it redraws whole renders (other viewpoints, defects and references)
as well as the images within each.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from padformer_edge_training.evaluation.protocol import ImageResult

IMAGES_REDRAWN = "the test images, per object and label kind"
RENDERS_REDRAWN = "the renders, then of each drawn render's test images"


@dataclass(frozen=True)
class MarginInterval:
    """Mean-over-objects image AUROC of ``first`` minus ``second``, as fractions."""

    margin: float  # on the images scored
    low: float
    high: float
    confidence: float
    resamples: int
    redrawn: str = IMAGES_REDRAWN  # what each resample drew again, in the table's words

    def describe(self) -> str:
        return (
            f"{100 * self.margin:+.1f} points, {100 * self.confidence:.0f}% paired bootstrap "
            f"interval {100 * self.low:+.1f} to {100 * self.high:+.1f} "
            f"({self.resamples} resamples of {self.redrawn})"
        )

    def brief(self) -> str:
        """'+1.2 [-3.0, +5.1]': the margin and its interval in points, for a table cell."""
        return f"{100 * self.margin:+.1f} [{100 * self.low:+.1f}, {100 * self.high:+.1f}]"


def pair_wins(defect_scores: np.ndarray, good_scores: np.ndarray) -> np.ndarray:
    """(defects, goods): 1 where the defective image scores higher, 1/2 on a tie, else 0.

    An AUROC is the mean of this matrix, and a resampled AUROC its weighted mean with
    the draw counts as weights, so every resample costs two small matrix products."""
    above = defect_scores[:, None] > good_scores[None, :]
    tied = defect_scores[:, None] == good_scores[None, :]
    return above + 0.5 * tied


def draw_counts(rng: np.random.Generator, size: int, resamples: int) -> np.ndarray:
    """(resamples, size): how often each of ``size`` images is drawn, ``size`` draws each."""
    return rng.multinomial(size, np.full(size, 1 / size), resamples)


def by_object(results: Sequence[ImageResult]) -> dict[str, dict[str, float]]:
    """object -> image path -> score."""
    scores: dict[str, dict[str, float]] = defaultdict(dict)
    for result in results:
        scores[result.record.category][str(result.record.path)] = float(result.score)
    return scores


def margin_draws(
    first: Sequence[ImageResult],
    second: Sequence[ImageResult],
    resamples: int,
    rng: np.random.Generator,
) -> tuple[float, np.ndarray]:
    """(the margin of ``first`` over ``second`` on the images scored, ``[resamples]``
    margins on redrawn test sets), as fractions; what both intervals below are read from.

    Both must have scored the same images; objects without both good and defective
    images are left out, as the tables' mean leaves out an undefined AUROC."""
    first_scores, second_scores = by_object(first), by_object(second)
    if first_scores.keys() != second_scores.keys() or any(
        first_scores[c].keys() != second_scores[c].keys() for c in first_scores
    ):
        raise ValueError("the two methods scored different images; pair them on one episode plan")
    labels = {str(r.record.path): not r.record.is_good for r in first}
    margins, draws = [], []
    for category, scores in first_scores.items():
        paths = sorted(scores)
        defects = [p for p in paths if labels[p]]
        goods = [p for p in paths if not labels[p]]
        if not defects or not goods:
            continue
        wins = [
            pair_wins(np.array([table[p] for p in defects]), np.array([table[p] for p in goods]))
            for table in (scores, second_scores[category])
        ]
        difference = wins[0] - wins[1]
        margins.append(float(difference.mean()))
        defect_counts, good_counts = (
            draw_counts(rng, len(group), resamples) for group in (defects, goods)
        )
        drawn = np.einsum("rd,dg,rg->r", defect_counts, difference, good_counts)
        draws.append(drawn / (len(defects) * len(goods)))
    if not margins:
        raise ValueError("no object has both good and defective images")
    return float(np.mean(margins)), np.mean(draws, axis=0)


def interval_of(
    margin: float, spread: np.ndarray, confidence: float, redrawn: str = IMAGES_REDRAWN
) -> MarginInterval:
    """The percentile interval of the resampled margins ``spread``."""
    tail = (1 - confidence) / 2
    low, high = np.quantile(spread, [tail, 1 - tail])
    return MarginInterval(margin, float(low), float(high), confidence, len(spread), redrawn)


def image_auroc_margin(
    first: Sequence[ImageResult],
    second: Sequence[ImageResult],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> MarginInterval:
    """The margin of ``first`` over ``second`` on one test set, with its percentile
    bootstrap interval."""
    rng = np.random.default_rng(seed)
    margin, spread = margin_draws(first, second, resamples, rng)
    return interval_of(margin, spread, confidence)


def margin_over_renders(
    pairs: Sequence[tuple[Sequence[ImageResult], Sequence[ImageResult]]],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> MarginInterval:
    """The margin averaged over several test renders (one ``(first, second)`` pair of
    result lists each), with a two-level bootstrap: each resample draws as many renders
    as were given, with replacement, and within each drawn render a redrawn test set.

    Why two levels: renders made with other seeds show other viewpoints, defects and
    references, and one validation and one test render of the same objects disagreed on
    the sign of a margin that each one's image bootstrap called settled. Redrawing the
    renders puts that variation into the interval; with few renders it is itself rough,
    which is why the per-render margins are reported beside it."""
    if not pairs:
        raise ValueError("the margin over renders needs at least one render")
    rng = np.random.default_rng(seed)
    margins, spreads = zip(
        *(margin_draws(first, second, resamples, rng) for first, second in pairs), strict=True
    )
    picks = rng.integers(0, len(pairs), size=(resamples, len(pairs)))
    spread = np.stack(spreads)[picks, np.arange(resamples)[:, None]].mean(axis=1)
    return interval_of(float(np.mean(margins)), spread, confidence, RENDERS_REDRAWN)
