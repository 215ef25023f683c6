"""A detector that runs another and changes what it returns: the one place that hands the
inner detector's settings, device, batch size and cache state through.

``detect.framed`` (find the part, score its crop) and ``detect.regions`` (ignore parts
of the frame) wrap whatever detector a profile's method built, torch's or the line's, so
each states only what it adds: its ``detect`` and its part of the scoring signature.
"""

from __future__ import annotations

from typing import Any

from padformer_edge.detect.detection import GroupedDetection, InspectionDetector
from padformer_edge.detect.settings import DetectionSettings


class WrappedDetector(GroupedDetection):
    """``inner``'s settings, device, batch size, cache state and images per call, as its
    own; a subclass gives ``detect`` and ``scoring``."""

    def __init__(self, inner: InspectionDetector) -> None:
        self.inner = inner

    @property
    def settings(self) -> DetectionSettings:
        return self.inner.settings

    @property
    def device(self) -> Any:
        return self.inner.device

    @property
    def max_batch(self) -> int:
        return self.inner.max_batch

    @max_batch.setter
    def max_batch(self, value: int) -> None:
        self.inner.max_batch = value

    @property
    def cache_hit(self) -> bool:
        return self.inner.cache_hit

    @property
    def images_per_call(self) -> int:
        return self.inner.images_per_call
