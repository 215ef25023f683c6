"""The counting of ``benchmarks/demo_validation.py``
(``padformer_edge_training.evaluation.demo_figures``): defects and camera views against the
threshold ``calibrate``'s rule sets on the first good views only, on score arrays whose
answers are known."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from padformer_edge.profiles.thresholds import false_alarm_threshold
from padformer_edge_training.evaluation.demo_figures import parse_render, rows_for
from padformer_edge_training.evaluation.metrics import image_auroc


def test_the_demos_own_render_is_refused_and_others_parse():
    with pytest.raises(argparse.ArgumentTypeError, match="the demo's own render"):
        parse_render("builtin:duck@0")
    with pytest.raises(argparse.ArgumentTypeError, match="MESH@SEED"):
        parse_render("builtin:duck")
    assert parse_render("builtin:duck@1") == ("builtin:duck", 1)
    assert parse_render("builtin:lego@0") == ("builtin:lego", 0)


def test_rows_threshold_on_the_calibration_views_and_count_the_rest():
    rng = np.random.default_rng(0)
    calibration = rng.uniform(0.0, 1.0, 12)
    camera = np.array([0.1, 0.2, 5.0])  # one far above any threshold from [0, 1)
    defects = np.array([0.05, 3.0, 4.0])  # two far above, one below every good view's p90
    scored = {
        "good": [*calibration, *camera],
        "defects": defects.tolist(),
        "create_cpu_s": 2.0,
        "cpu_s_per_image": 0.5,
    }
    args = argparse.Namespace(calibration=[12], target_fpr=[0.1])
    (row,) = rows_for(scored, args)
    assert row["threshold"] == false_alarm_threshold(calibration, 0.1).value
    assert (row["flagged"], row["defects"]) == (2, 3)
    assert (row["false_alarms"], row["camera_good"]) == (1, 3)
    assert row["cpu_s"] == 2.0 + 0.5 * (12 + 15)  # profile, then calibration + 15 camera images


def test_rows_rank_defects_against_the_camera_views_with_half_ties():
    args = argparse.Namespace(calibration=[2], target_fpr=[0.1])
    for camera, defects, expected in (
        ([0.0, 1.0], [2.0, 3.0], 1.0),
        ([2.0, 3.0], [0.0, 1.0], 0.0),
        ([1.0], [1.0], 0.5),
    ):
        scored = {
            "good": [0.0, 0.0, *camera],
            "defects": defects,
            "create_cpu_s": 0.0,
            "cpu_s_per_image": 0.0,
        }
        (row,) = rows_for(scored, args)
        assert (
            row["auroc"]
            == expected
            == image_auroc([False] * len(camera) + [True] * len(defects), [*camera, *defects])
        )
