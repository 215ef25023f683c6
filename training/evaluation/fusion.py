"""Score one set of detection passes under several fused-metric settings at once.

Choosing the fused metric's LAB weight, reference weight, zoom and turns, and readout on
validation data would otherwise mean running the whole detection once per candidate.
The reconstruction is the expensive part and depends on none of them, so each query is
reconstructed once, both raw error maps are kept per pass with the query's
nearest-reference distances, and every setting is scored from them; a replaying scorer
then hands each setting's results to the ordinary evaluation protocol.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.fused import Mix, mix_errors, score_scales_of
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.paper_metrics import Readout
from padformer_edge.detect.reference_distance import (
    ReferenceBank,
    nearest_reference_distances,
    reference_banks,
    reference_distance,
)
from padformer_edge.detect.scoring import PassMoments
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.padformer import PADFormer
from padformer_edge_training.evaluation.scorers import Scored
from padformer_edge_training.score_scales import pass_errors


@dataclass(frozen=True)
class FusedSetting:
    """One candidate of the sweep: the mix's LAB weight, its reference weight, the readout,
    and the zoom and turns of its reference distance."""

    lab_weight: float
    reference_weight: float
    readout: Readout
    reference_zoom: int = 1
    reference_turns: bool = False

    @property
    def mix(self) -> Mix:
        return Mix.of(
            self.lab_weight, self.reference_weight, self.reference_zoom, self.reference_turns
        )


class FusionSweepScorer:
    """Reconstructs every query once and scores it for each setting of ``weights`` x
    ``reference_weights`` x ``reference_zooms`` x ``reference_turns`` x ``readouts`` (a
    weight of 0 is swept at zoom 1 without turns only: without the term they change
    nothing); ``score`` returns the first setting's results and keeps all of them in
    ``results``."""

    def __init__(
        self,
        model: PADFormer,
        weights: Sequence[float],
        readouts: Sequence[Readout],
        reference_weights: Sequence[float] = (0.0,),
        passes: int = 15,
        seed: int = 0,
        reference_zooms: Sequence[int] = (1,),
        reference_turns: Sequence[bool] = (False,),
    ) -> None:
        self.model, self.passes, self.seed = model, passes, seed
        self.settings = [
            FusedSetting(w, r, readout, zoom, turns)
            for w in weights
            for r in reference_weights
            for zoom in (reference_zooms if r > 0 else (1,))
            for turns in (reference_turns if r > 0 else (False,))
            for readout in readouts
        ]
        self.zoom, self.turns = max(reference_zooms), any(reference_turns)
        self.scales = score_scales_of(model)
        self.results: dict[FusedSetting, list[Scored]] = {s: [] for s in self.settings}
        self.detector: Detector | None = None
        self.banks: list[ReferenceBank] | None = None

    @torch.inference_mode()
    def prepare(self, references: Sequence[np.ndarray]) -> None:
        settings = DetectionSettings(passes=self.passes, metric="lab", seed=self.seed, device="cpu")
        self.detector = Detector(self.model, references, settings)
        device = self.detector.device
        references01 = [to_unit_tensor(image, device) for image in references]
        self.banks = reference_banks(self.model, references01, self.zoom, self.turns)

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        assert self.detector is not None and self.banks is not None, "prepare() comes first"
        first = []
        for query in queries:
            maps, query01, feature_target = pass_errors(self.detector, query)
            distances = nearest_reference_distances(
                self.model, query01, feature_target, self.banks, query.shape[:2]
            )
            scale = max(query.shape[:2]) / self.model.config.img_size
            moments: dict[Mix, PassMoments] = {}
            for setting in self.settings:
                mix = setting.mix
                if mix not in moments:
                    reference = (
                        reference_distance(distances, mix.zoom, mix.turns)
                        if mix.reference_weight > 0
                        else None
                    )
                    errors = mix_errors(
                        maps["lab"],
                        maps["feature"],
                        self.scales,
                        mix.lab_weight,
                        reference,
                        mix.reference_weight,
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
