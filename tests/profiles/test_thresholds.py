"""Threshold arithmetic on known score arrays."""

from __future__ import annotations

import numpy as np
import pytest

from padformer_edge.profiles.thresholds import (
    confusion_at,
    f1_optimal_threshold,
    false_alarm_threshold,
    good_images_needed,
    quantile_standard_error,
)


@pytest.mark.parametrize(("fpr", "needed"), [(0.01, 299), (0.05, 59), (0.1, 29)])
def test_good_images_needed_follows_the_tail_coverage_rule(fpr, needed):
    assert good_images_needed(fpr) == needed
    assert (1 - fpr) ** needed <= 0.05 < (1 - fpr) ** (needed - 1)


def test_threshold_is_the_quantile_plus_its_standard_error():
    good = np.random.default_rng(1).normal(10.0, 2.0, size=400)
    threshold = false_alarm_threshold(good, 0.05)
    assert threshold.quantile == pytest.approx(np.quantile(good, 0.95))
    assert threshold.value == pytest.approx(threshold.quantile + threshold.margin)
    # for a normal sample the quantile's standard error is sqrt(p(1-p)/n) / density
    density = np.exp(-0.5 * 1.645**2) / (2.0 * np.sqrt(2 * np.pi))
    expected = np.sqrt(0.95 * 0.05 / 400) / density
    assert threshold.margin == pytest.approx(expected, rel=0.35)


def test_margin_shrinks_with_more_good_images():
    rng = np.random.default_rng(2)
    small = quantile_standard_error(rng.normal(size=50), 0.9)
    large = quantile_standard_error(rng.normal(size=2000), 0.9)
    assert large < small / 3


def test_constant_scores_need_no_margin():
    assert false_alarm_threshold(np.full(20, 3.0), 0.1).margin == 0.0


def test_confusion_counts_scores_above_the_threshold_as_anomalous():
    good, bad = np.array([1.0, 2.0, 3.0, 4.0]), np.array([3.0, 5.0, 6.0])
    recall, precision, f1 = confusion_at(good, bad, 3.0)
    assert (recall, precision) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert f1 == pytest.approx(2 / 3)


def test_f1_optimal_threshold_separates_separable_scores():
    threshold, f1 = f1_optimal_threshold(np.array([1.0, 2.0, 2.5]), np.array([4.0, 7.0]))
    assert f1 == 1.0 and threshold == pytest.approx(3.25)
