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
the spread a fresh table would show.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from training.evaluation.protocol import ImageResult


@dataclass(frozen=True)
class MarginInterval:
    """Mean-over-objects image AUROC of ``first`` minus ``second``, as fractions."""

    margin: float  # on the images scored
    low: float
    high: float
    confidence: float
    resamples: int

    def describe(self) -> str:
        return (
            f"{100 * self.margin:+.1f} points, {100 * self.confidence:.0f}% paired bootstrap "
            f"interval {100 * self.low:+.1f} to {100 * self.high:+.1f} "
            f"({self.resamples} resamples of the test images, per object and label kind)"
        )


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


def image_auroc_margin(
    first: Sequence[ImageResult],
    second: Sequence[ImageResult],
    resamples: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> MarginInterval:
    """The margin of ``first`` over ``second`` with its percentile bootstrap interval.

    Both must have scored the same images; objects without both good and defective
    images are left out, as the tables' mean leaves out an undefined AUROC."""
    rng = np.random.default_rng(seed)
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
    spread = np.mean(draws, axis=0)
    tail = (1 - confidence) / 2
    low, high = np.quantile(spread, [tail, 1 - tail])
    return MarginInterval(float(np.mean(margins)), float(low), float(high), confidence, resamples)
