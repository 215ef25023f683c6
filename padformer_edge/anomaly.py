"""The one rule that turns a score into a verdict: above the threshold is anomalous.

The store's ``is_anomaly`` column, a profile's verdict, the alert planner and the
calibration statistics must agree on what happens at equality, or a part scored exactly
at the threshold could be stored as good and still raise an alert. Every one of them
asks this function, so equality counts as good everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

if TYPE_CHECKING:
    import numpy as np


@overload
def is_anomalous(score: float, threshold: float) -> bool: ...


@overload
def is_anomalous(score: np.ndarray, threshold: float) -> np.ndarray: ...


def is_anomalous(score, threshold):
    """``score > threshold``: a float gives a bool, a numpy array an element-wise mask."""
    return score > threshold
