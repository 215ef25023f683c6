"""Detection-quality metrics: image AUROC, pixel AUROC and AUPRO.

ROC areas are the Mann-Whitney statistic of the scores' ranks, ties counted one half: the
same number scikit-learn's ``roc_auc_score`` gives (the tests hold them equal), from one
sort instead of a curve built threshold by threshold: on the million pixels of a class
scikit-learn's curve was the slowest step of a validation sweep, scoring 126 settings.
AUPRO follows the MVTec-AD definition: for each threshold, the false-positive rate over
all normal pixels and the mean, over every connected ground-truth region of every image,
of the share of that region above the threshold; the PRO curve is integrated over FPR
from 0 to 0.3 and divided by 0.3. It is computed exactly (one cumulative sum over the
pixels sorted by score, every distinct score a threshold) rather than on a threshold
grid, so the value does not depend on how finely a grid would be spaced.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import ndimage

FPR_LIMIT = 0.3
# 8-connectivity, as the MVTec-AD evaluation code labels its ground-truth regions.
REGION_STRUCTURE = np.ones((3, 3), dtype=bool)


def auroc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve; NaN when only one class is present (it is undefined).

    The chance that a random positive outscores a random negative: the positives' rank
    sum, less the smallest it could be, over the number of pairs. Tied scores share
    their mean rank, which counts a tied pair one half, as the ROC's diagonal steps do."""
    labels = np.asarray(labels).astype(bool).ravel()
    positives = int(labels.sum())
    negatives = labels.size - positives
    if positives == 0 or negatives == 0:
        return math.nan
    scores = np.asarray(scores, dtype=np.float64).ravel()
    order = np.argsort(scores)  # ties are grouped below, so their order does not matter
    ranked = scores[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]])
    ends = np.r_[starts[1:], ranked.size]
    positives_per_tie = np.add.reduceat(labels[order].astype(np.int64), starts)
    rank_sum = float(np.dot(positives_per_tie, (starts + 1 + ends) / 2.0))
    return (rank_sum - positives * (positives + 1) / 2.0) / (positives * negatives)


def image_auroc(is_anomalous: Sequence[bool], scores: Sequence[float]) -> float:
    """Good-versus-defective ranking of whole images by their scores."""
    return auroc(np.asarray(is_anomalous), np.asarray(scores))


def pixel_auroc(masks: Sequence[np.ndarray], maps: Sequence[np.ndarray]) -> float:
    """Every pixel of every image pooled into one ROC."""
    return auroc(
        np.concatenate([m.ravel() for m in masks]), np.concatenate([a.ravel() for a in maps])
    )


def trapezoid_to(x: np.ndarray, y: np.ndarray, limit: float) -> float:
    """Area under the piecewise-linear curve (x ascending) from x[0] to ``limit``,
    interpolating y at ``limit`` when the curve passes it between two points."""
    keep = x <= limit
    xs, ys = x[keep], y[keep]
    if xs[-1] < limit and keep.sum() < len(x):
        nxt = int(keep.sum())
        x0, x1, y0, y1 = x[nxt - 1], x[nxt], y[nxt - 1], y[nxt]
        y_limit = y0 + (y1 - y0) * (limit - x0) / (x1 - x0)
        xs, ys = np.append(xs, limit), np.append(ys, y_limit)
    return float(np.sum((xs[1:] - xs[:-1]) * (ys[1:] + ys[:-1]) / 2.0))


def pro_curve(
    masks: Sequence[np.ndarray], maps: Sequence[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, PRO) at every distinct score, from the highest threshold to the lowest.

    Each anomalous pixel carries the weight 1 / (its region's area * number of regions),
    each normal pixel 1 / (number of normal pixels); lowering the threshold past a pixel
    adds its weight to PRO or FPR, so both curves are cumulative sums over sorted scores.
    """
    region_weights, scores = [], []
    regions = 0
    for mask, amap in zip(masks, maps, strict=True):
        labelled, count = ndimage.label(mask.astype(bool), structure=REGION_STRUCTURE)
        areas = np.bincount(labelled.ravel(), minlength=count + 1).astype(np.float64)
        area = areas[labelled]  # for normal pixels this is the background's size, unused
        region_weights.append(np.where(labelled > 0, 1.0 / area, 0.0).ravel())
        scores.append(np.asarray(amap, dtype=np.float64).ravel())
        regions += count
    anomalous_weight = np.concatenate(region_weights)
    score = np.concatenate(scores)
    normal = anomalous_weight == 0
    if regions == 0 or normal.all():
        raise ValueError("PRO needs at least one anomalous and one normal pixel")
    order = np.argsort(-score)  # a tie group is read at its last index, in any order
    score, anomalous_weight, normal = score[order], anomalous_weight[order], normal[order]
    pro = np.cumsum(anomalous_weight) / regions
    fpr = np.cumsum(normal) / normal.sum()
    # Pixels with equal scores pass the threshold together: keep each group's last index.
    last = np.r_[score[1:] != score[:-1], True]
    return np.r_[0.0, fpr[last]], np.r_[0.0, pro[last]]


def aupro(
    masks: Sequence[np.ndarray], maps: Sequence[np.ndarray], limit: float = FPR_LIMIT
) -> float:
    """Normalised area under the PRO curve up to FPR ``limit``; NaN without defects."""
    try:
        fpr, pro = pro_curve(masks, maps)
    except ValueError:
        return math.nan
    return trapezoid_to(fpr, pro, limit) / limit
