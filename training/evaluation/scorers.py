"""The interface every evaluated method implements, and PADFormer behind it.

A scorer is told its references once per reference set (``prepare``) and then scores
batches of queries, so that each method can cache what it derives from the references,
as it would on a line: PADFormer its encoded reference tokens, PatchCore its memory bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from padformer_edge.detect.detection import InspectionDetector
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.registry import method_for
from padformer_edge.model.padformer import PADFormer


@dataclass
class Scored:
    """One query's image score, its ``H x W`` anomaly map and, when the method has one,
    the image it compared the query with (a reconstruction or the chosen reference)."""

    score: float
    anomaly_map: np.ndarray
    comparison: np.ndarray | None = None


class Scorer(Protocol):
    name: str

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        """Take the good references (RGB ``uint8``) that the next queries are judged by."""
        ...

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        """Score RGB ``uint8`` queries; maps come back at each query's resolution."""
        ...


class PADFormerScorer:
    """Multi-pass detection through ``Detector`` (cached references, batched passes),
    keeping each query's mean reconstruction for the report."""

    def __init__(
        self,
        model: PADFormer,
        name: str = "PADFormer",
        settings: DetectionSettings | None = None,
    ) -> None:
        self.model, self.name = model, name
        self.settings = DetectionSettings(metric="auto") if settings is None else settings
        self.detector: InspectionDetector | None = None

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        method = method_for(self.settings.metric)  # compare reads its comparator, not the model
        self.detector = method.torch_detector(references, self.settings, lambda: self.model)

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        detector = self.detector
        assert detector is not None, "prepare() comes first"
        return [
            Scored(found.score, found.anomaly_map, found.reconstruction)
            for _, _, found in detector.detect_each(queries, reconstruction=True)
        ]
