"""Score one set of detection passes under several fused-metric settings at once.

Choosing the fused metric's LAB weight and readout on validation data would otherwise
mean running the whole detection once per candidate. The reconstruction is the expensive
part and depends on neither, so each query is reconstructed once, both raw error maps
are kept per pass, and every (weight, readout) pair is scored from them; a replaying
scorer then hands each pair's results to the ordinary evaluation protocol.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.scoring import PassMoments, Readout, mix_errors, score_scales_of
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model import PADFormer
from training.evaluation.scorers import Scored
from training.score_scales import pass_error_maps


class FusionSweepScorer:
    """Reconstructs every query once and scores it for each pair of ``weights`` x
    ``readouts``; ``score`` returns the first pair's results and keeps all of them in
    ``results``."""

    def __init__(
        self,
        model: PADFormer,
        weights: Sequence[float],
        readouts: Sequence[Readout],
        passes: int = 15,
        seed: int = 0,
    ) -> None:
        self.model, self.passes, self.seed = model, passes, seed
        self.weights, self.readouts = list(weights), list(readouts)
        self.scales = score_scales_of(model)
        self.results: dict[tuple[float, Readout], list[Scored]] = {
            (w, r): [] for w in self.weights for r in self.readouts
        }
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
            scale = max(query.shape[:2]) / self.model.config.img_size
            for weight in self.weights:
                moments = PassMoments.of(
                    mix_errors(maps["lab"], maps["feature"], self.scales, weight)
                )
                for readout in self.readouts:
                    amap = readout.apply(moments.mean, moments.variance, scale)
                    self.results[(weight, readout)].append(Scored(float(amap.max()), amap.numpy()))
            first.append(self.results[(self.weights[0], self.readouts[0])][-1])
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
