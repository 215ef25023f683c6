"""Threshold arithmetic on score arrays: no files, no model, so every rule is testable.

The threshold is the ``1 - target_fpr`` quantile of scores of held-out good images plus a
margin of one bootstrap standard error of that quantile. The quantile alone would put
the expected false-alarm rate at the target only on average over calibration sets; half
of all sets would land it too low and the line would alarm more often than promised. The
standard error measures how far the quantile moves between calibration sets of this
size, so the margin shrinks as more good images are given and never exceeds what the
data says is uncertain. Bootstrapping needs no assumption about the score distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.profiles.schema import AnomalyCheck, ScoreSummary

MIN_GOOD_IMAGES = 10
"""Below this a quantile and its standard error are noise; calibration refuses to run."""
COVERAGE_CONFIDENCE = 0.95
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_CHUNK = 200  # resamples drawn at once: bounded memory for large good sets
BOOTSTRAP_SEED = 0  # fixed, so the same scores always give the same threshold


def good_images_needed(target_fpr: float, confidence: float = COVERAGE_CONFIDENCE) -> int:
    """Good images needed so that the false-alarm tail is likely to be seen at all.

    If every one of ``n`` good scores falls below the true ``1 - target_fpr`` quantile
    (probability ``(1 - target_fpr) ** n``), the calibration set holds no image from the
    tail the threshold is meant to cut, and the threshold is a guess. ``n`` is the least
    count that makes that chance at most ``1 - confidence``: 299 for 1 %, 59 for 5 %.
    """
    return math.ceil(math.log(1.0 - confidence) / math.log(1.0 - target_fpr))


def quantile_standard_error(scores: np.ndarray, level: float) -> float:
    """Bootstrap standard error of the ``level`` quantile of ``scores``."""
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    quantiles = [
        np.quantile(rng.choice(scores, size=(BOOTSTRAP_CHUNK, scores.size)), level, axis=1)
        for _ in range(BOOTSTRAP_RESAMPLES // BOOTSTRAP_CHUNK)
    ]
    return float(np.concatenate(quantiles).std(ddof=1))


@dataclass(frozen=True)
class Threshold:
    """A threshold and the two numbers it is made of."""

    value: float
    quantile: float
    margin: float


def false_alarm_threshold(good: np.ndarray, target_fpr: float) -> Threshold:
    """``quantile(good, 1 - target_fpr) + one bootstrap standard error``."""
    level = 1.0 - target_fpr
    quantile = float(np.quantile(good, level))
    margin = quantile_standard_error(good, level)
    return Threshold(quantile + margin, quantile, margin)


def summarise(scores: np.ndarray) -> ScoreSummary:
    """Count, range, mean, spread and the median, 90th and 99th percentiles."""
    p50, p90, p99 = np.quantile(scores, [0.5, 0.9, 0.99])
    return ScoreSummary(
        count=int(scores.size),
        min=float(scores.min()),
        max=float(scores.max()),
        mean=float(scores.mean()),
        std=float(scores.std()),
        p50=float(p50),
        p90=float(p90),
        p99=float(p99),
    )


def confusion_at(good: np.ndarray, anomalous: np.ndarray, threshold: float) -> tuple[float, ...]:
    """(recall, precision, F1) when ``score > threshold`` is called anomalous."""
    tp = int(is_anomalous(anomalous, threshold).sum())
    fp = int(is_anomalous(good, threshold).sum())
    recall = tp / anomalous.size
    precision = tp / (tp + fp) if tp + fp else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return recall, precision, f1


def f1_optimal_threshold(good: np.ndarray, anomalous: np.ndarray) -> tuple[float, float]:
    """(threshold, F1) maximising F1; thresholds are midway between adjacent distinct
    scores (or just below the lowest), so the chosen one does not sit on a sample."""
    values = np.unique(np.concatenate([good, anomalous]))
    below = values[0] - max(1e-12, 1e-6 * abs(values[0]))
    candidates = np.concatenate([[below], (values[:-1] + values[1:]) / 2])
    f1s = [confusion_at(good, anomalous, float(t))[2] for t in candidates]
    best = int(np.argmax(f1s))  # first maximum: the lowest threshold among equals
    return float(candidates[best]), float(f1s[best])


def anomaly_check(good: np.ndarray, anomalous: np.ndarray, threshold: float) -> AnomalyCheck:
    """How the chosen threshold does on labelled anomalies, and what F1 alone would pick."""
    recall, precision, f1 = confusion_at(good, anomalous, threshold)
    best_threshold, best_f1 = f1_optimal_threshold(good, anomalous)
    return AnomalyCheck(
        count=int(anomalous.size),
        scores=summarise(anomalous),
        recall_at_threshold=recall,
        precision_at_threshold=precision,
        f1_at_threshold=f1,
        f1_optimal_threshold=best_threshold,
        f1_optimal=best_f1,
    )
