"""The resampling behind ``benchmarks/calibration_draws.py``: the draws, each draw's threshold and
promise, what it delivered, and the targets, on score arrays whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from padformer_edge.errors import UserError
from padformer_edge.profiles.thresholds import good_images_needed
from padformer_edge_training.evaluation.calibration_draws import (
    DrawSummary,
    calibrate_draw,
    draw_indices,
    resample,
    table_rows,
    targets,
)


def test_draws_are_distinct_indices_repeatable_from_their_seed():
    rows = draw_indices(50, 12, 200, np.random.default_rng(3))
    assert rows.shape == (200, 12)
    assert rows.min() >= 0 and rows.max() < 50
    assert all(len(set(row)) == 12 for row in rows)
    assert len({tuple(sorted(row)) for row in rows}) > 190  # random sets, not one set
    assert np.array_equal(rows, draw_indices(50, 12, 200, np.random.default_rng(3)))


@pytest.mark.parametrize("size", [0, 50, 60])
def test_a_draw_that_leaves_nothing_to_test_on_is_refused_in_one_sentence(size):
    with pytest.raises(UserError, match="raise --good-views"):
        draw_indices(50, size, 10, np.random.default_rng(0))


def test_an_upper_bound_draw_promises_the_exact_order_statistic_bound():
    # 30 calibration scores 1..30, 10 % target: only the highest score (0 of 30 above it)
    # has an upper bound within 10 %: 1 - 0.05 ** (1 / 30) = 9.50 %
    calibration = np.arange(1.0, 31.0)
    tested = np.arange(0.5, 40.5)  # 40 views, 10 of them (30.5 .. 39.5) above 30
    draw = calibrate_draw(calibration, tested, 0.1, "upper-bound")
    assert draw.threshold == 30.0
    assert draw.promised == pytest.approx(1 - 0.05 ** (1 / 30), abs=1e-12)  # bisection: 2**-60
    assert draw.delivered == 10 / 40
    assert not draw.holds
    within = calibrate_draw(calibration, np.arange(0.5, 30.0), 0.1, "upper-bound")
    assert within.delivered == 0.0 and within.holds


def test_a_quantile_draw_is_scored_by_the_verdict_rule():
    calibration = np.linspace(0.0, 1.0, 101)
    draw = calibrate_draw(calibration, calibration, 0.1, "quantile")
    assert 0.9 < draw.threshold < 1.0  # the 90 % quantile plus a positive margin
    assert draw.delivered == np.mean(calibration > draw.threshold)
    # a threshold with m of 101 above it promises the Clopper-Pearson upper end, above m/101
    assert draw.promised > draw.delivered


def test_resampling_tests_on_the_other_render_when_given_one():
    scores = np.random.default_rng(0).uniform(size=120)
    higher = resample(scores, 30, 40, 0.1, "quantile", seed=1, other=scores + 10.0)
    assert higher.median == higher.p90 == 1.0 and higher.holds == 0.0
    lower = resample(scores, 30, 40, 0.1, "upper-bound", seed=1, other=scores - 10.0)
    assert lower.median == lower.p90 == 0.0 and lower.holds == 1.0
    assert not higher.refused and higher.draws == 40


def test_resampling_on_one_render_tests_each_draw_on_the_views_it_left_out():
    # one draw of 99 of 100 leaves one view out: the summary is that one view's verdict
    scores = np.arange(100.0)
    one = resample(scores, 99, 1, 0.1, "quantile", seed=0)
    (row,) = draw_indices(100, 99, 1, np.random.default_rng(0))
    left_out = np.delete(scores, row)
    expected = calibrate_draw(scores[row], left_out, 0.1, "quantile")
    assert left_out.size == 1
    assert one.median == expected.delivered
    assert one.holds == float(expected.holds)


def test_too_few_images_for_the_upper_bound_are_a_refused_row():
    needed = good_images_needed(0.1)
    refused = resample(np.arange(100.0), needed - 1, 10, 0.1, "upper-bound", seed=0)
    assert refused.refused and np.isnan(refused.median)
    row = table_rows([refused], 0.1, "render")[0]
    assert row[4] == f"refused (needs {needed})"


def test_targets_read_the_same_render_rows():
    def summary(rule: str, size: int, median: float, holds: float) -> DrawSummary:
        return DrawSummary(rule, size, 200, False, median, median, median, holds)

    good = [summary("quantile", 30, 0.11, 0.95), summary("upper-bound", 30, 0.03, 0.99),
            DrawSummary("upper-bound", 12, 200, refused=True)]  # fmt: skip
    assert all(targets(good, 0.1).values())
    high = [summary("quantile", 30, 0.13, 0.95)]
    assert list(targets(high, 0.1).values()) == [True, False]
    loose = [summary("quantile", 30, 0.11, 0.95), summary("quantile", 100, 0.1, 0.85)]
    assert list(targets(loose, 0.1).values()) == [False, True]
