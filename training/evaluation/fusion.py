"""Score one set of detection passes under several fused-metric settings at once.

Choosing the fused metric's LAB weight, reference weight and readout on validation data
would otherwise mean running the whole detection once per candidate. The reconstruction
is the expensive part and depends on none of them, so each query is reconstructed once,
both raw error maps are kept per pass with the query's nearest-reference distance, and
every setting is scored from them; a replaying scorer then hands each setting's results
to the ordinary evaluation protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.scoring import (
    PassMoments,
    Readout,
    mix_errors,
    nearest_reference_distance,
    reference_bank,
    score_scales_of,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model import PADFormer
from training.evaluation.scorers import Scored
from training.score_scales import pass_error_maps


@dataclass(frozen=True)
class FusedSetting:
    """One candidate of the sweep: the mix's LAB weight, its reference weight, the readout."""

    lab_weight: float
    reference_weight: float
    readout: Readout


class FusionSweepScorer:
    """Reconstructs every query once and scores it for each setting of ``weights`` x
    ``reference_weights`` x ``readouts``; ``score`` returns the first setting's results
    and keeps all of them in ``results``."""

    def __init__(
        self,
        model: PADFormer,
        weights: Sequence[float],
        readouts: Sequence[Readout],
        reference_weights: Sequence[float] = (0.0,),
        passes: int = 15,
        seed: int = 0,
    ) -> None:
        self.model, self.passes, self.seed = model, passes, seed
        self.settings = [
            FusedSetting(w, r, readout)
            for w in weights
            for r in reference_weights
            for readout in readouts
        ]
        self.scales = score_scales_of(model)
        self.results: dict[FusedSetting, list[Scored]] = {s: [] for s in self.settings}
        self.detector: Detector | None = None
        self.bank: torch.Tensor | None = None

    @torch.inference_mode()
    def prepare(self, references: Sequence[np.ndarray]) -> None:
        settings = DetectionSettings(passes=self.passes, metric="lab", seed=self.seed, device="cpu")
        self.detector = Detector(self.model, references, settings)
        refs = torch.stack([self.detector.to_model_input(image) for image in references])
        self.bank = reference_bank(self.model, refs)

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.detector is not None and self.bank is not None, "prepare() comes first"
        first = []
        for query in queries:
            maps = pass_error_maps(self.detector, query)
            query_model = self.detector.to_model_input(query).unsqueeze(0)
            reference = nearest_reference_distance(
                self.model, self.model.target_features(query_model), self.bank, query.shape[:2]
            )
            scale = max(query.shape[:2]) / self.model.config.img_size
            moments: dict[tuple[float, float], PassMoments] = {}
            for setting in self.settings:
                mix = (setting.lab_weight, setting.reference_weight)
                if mix not in moments:
                    errors = mix_errors(
                        maps["lab"], maps["feature"], self.scales, mix[0], reference, mix[1]
                    )
                    moments[mix] = PassMoments.of(errors)
                amap = setting.readout.apply(moments[mix].mean, moments[mix].variance, scale)
                self.results[setting].append(Scored(float(amap.max()), amap.numpy()))
            first.append(self.results[self.settings[0]][-1])
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
