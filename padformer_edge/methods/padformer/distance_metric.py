"""The ``distance`` metric: how far each cell of a query lies from the nearest cell of any
reference, with no reconstruction pass (the search itself is ``distance_search``).

It is the ``fused`` metric with the reconstruction weighted out, so that its zoom, turns
and smoothing come from the same validated settings the fused metric reads.
"""

from __future__ import annotations

import torch

from padformer_edge.detect.readout import Readout
from padformer_edge.methods.padformer.fused_metric import FusedMetric, model_scoring
from padformer_edge.methods.padformer.fused_scoring import (
    JobScoring,
    ScoringConfig,
    resolve_scoring,
)
from padformer_edge.model.padformer import PADFormer


class DistanceMetric(FusedMetric):
    """The nearest-reference distance alone, with no reconstruction pass: the ``fused``
    metric with the reconstruction weighted out, each job keeping its reference weight,
    zoom, turns and smoothing (a job that weighs the references 0 reads them at weight 1).
    With no passes there is no variance to filter by, so both jobs read the plain map.
    It is the floor the reconstruction must beat, and the fast choice for a weak CPU: it
    costs the frozen CNN's features and a nearest-neighbour search, not 15 decoder passes.
    """

    reads_passes = False

    def __init__(
        self,
        model: PADFormer,
        scoring: ScoringConfig | None = None,
        references01: list[torch.Tensor] | None = None,
    ) -> None:
        given = ScoringConfig() if scoring is None else scoring
        fused = resolve_scoring(model_scoring(model), given)  # what the fused metric weighs
        weighed = ScoringConfig(
            map=JobScoring(reference_weight=fused.map.reference_weight or 1.0),
            score=JobScoring(reference_weight=fused.score.reference_weight or 1.0),
        )
        super().__init__(model, weighed.over(given), references01, reconstruction_weight=0.0)
        self.map_readout = Readout(consistency_filter=False, sigma=self.map_readout.sigma)
        self.score_readout = Readout(consistency_filter=False, sigma=self.score_readout.sigma)

    def batch_maps(
        self, queries01: list[torch.Tensor], queries_model: torch.Tensor
    ) -> list[list[list[torch.Tensor]]]:
        """Each job's weighted reference distance, map job first (no LAB target: nothing
        here compares colours), as one map per magnification on its cells
        (``batch_reference_levels``; the detector reads them there, ``readout.read_levels``),
        for every query of one detector call, the search taken once for all."""
        features = self.feature_targets(queries01, queries_model)
        return [
            [
                [mix.reference_weight * level for level in levels]  # type: ignore[union-attr]
                for mix, levels in zip(self.mixes, references, strict=True)
            ]
            for references in self.batch_reference_levels(queries01, torch.cat(features))
        ]
