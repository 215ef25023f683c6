"""The anomaly rule: every place that turns a score into a verdict agrees at equality."""

from __future__ import annotations

import numpy as np

from padformer_edge.anomaly import is_anomalous
from padformer_edge.profiles.thresholds import confusion_at
from padformer_edge.store.queue import DetectionOutcome


def test_above_is_anomalous_and_equal_is_good() -> None:
    assert is_anomalous(2.5, 2.0)
    assert not is_anomalous(2.0, 2.0)
    assert not is_anomalous(1.5, 2.0)
    mask = is_anomalous(np.array([1.5, 2.0, 2.5]), 2.0)
    assert mask.tolist() == [False, False, True]


def test_store_alerts_and_calibration_share_the_rule_at_the_threshold() -> None:
    threshold = 2.0
    outcome = DetectionOutcome(threshold, threshold, None, "0" * 64, 1.0)
    assert outcome.is_anomaly is False  # the worker plans an alert only when this is true
    above = DetectionOutcome(np.nextafter(threshold, np.inf), threshold, None, "0" * 64, 1.0)
    assert above.is_anomaly is True
    recall, _, _ = confusion_at(np.array([threshold]), np.array([threshold, 3.0]), threshold)
    assert recall == 0.5  # the anomaly scored exactly at the threshold is not caught
