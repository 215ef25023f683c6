"""Score one set of detection passes under several fused-metric weights at once.

Choosing the fused metric's LAB weight on validation data would otherwise mean running
the whole detection once per candidate weight. The reconstruction is the expensive part
and does not depend on the weight, so each query is reconstructed once, both raw error
maps are kept per pass, and every candidate weight is scored from them; a replaying
scorer then hands each weight's results to the ordinary evaluation protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.scoring import (
    PassMoments,
    consistency_filter,
    mix_errors,
    score_scales_of,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model import PADFormer
from training.evaluation.scorers import Scored
from training.score_scales import pass_error_maps


class FusionSweepScorer:
    """Reconstructs every query once and scores it for each of ``weights``; ``score``
    returns the first weight's results and keeps all of them in ``results``."""

    def __init__(
        self, model: PADFormer, weights: Sequence[float], passes: int = 15, seed: int = 0
    ) -> None:
        self.model, self.weights, self.passes, self.seed = model, list(weights), passes, seed
        self.scales = score_scales_of(model)
        self.results: dict[float, list[Scored]] = {w: [] for w in self.weights}
        self.detector: Detector | None = None

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        settings = DetectionSettings(passes=self.passes, metric="lab", seed=self.seed, device="cpu")
        self.detector = Detector(self.model, references, settings)

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.detector is not None, "prepare() comes first"
        first = []
        for query in queries:
            maps = pass_error_maps(self.detector, query)
            for weight in self.weights:
                errors = mix_errors(maps["lab"], maps["feature"], self.scales, weight)
                moments = PassMoments.of(errors)
                amap = consistency_filter(moments.mean, moments.variance)
                self.results[weight].append(Scored(float(amap.max()), amap.numpy()))
            first.append(self.results[self.weights[0]][-1])
        return first


class ReplayScorer:
    """Hands out results computed earlier, in the order the protocol asks for them."""

    def __init__(self, results: Sequence[Scored]) -> None:
        self.pending = list(results)

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        return None

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        taken, self.pending = self.pending[: len(queries)], self.pending[len(queries) :]
        return taken
