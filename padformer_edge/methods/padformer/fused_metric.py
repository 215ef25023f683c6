"""The ``fused`` score: the paper's LAB and predicted-feature errors and the
nearest-reference distance, mixed per pass, read once for the map and once for the score.

The LAB and predicted-feature errors are each divided by their spread on good views
(stored in the checkpoint as ``score_scales``) and mixed with a LAB weight: colour finds
stains, features find shape and texture, and neither alone finds both. The
nearest-reference distance (``methods.padformer.distance_search``) is the same for every pass, so
it moves the pass mean and leaves the variance alone. The anomaly map and the image score
each take their own mix and readout (``fused_scoring.ScoringConfig``), all chosen on
validation data, because outlining a defect and ranking whole images want different
things. The reference term alone, with no reconstruction pass, is the ``distance`` method
(``methods.padformer.distance_metric``), which builds on this metric's settings.
"""

from __future__ import annotations

import torch

from padformer_edge.detect.readout import Readout
from padformer_edge.methods.padformer.distance_maps import level_distances, mix_distances
from padformer_edge.methods.padformer.distance_search import (
    batch_best_cosines,
    batch_reference_distances,
    reference_banks,
    resolve_search,
)
from padformer_edge.methods.padformer.fused_scoring import (
    JobScoring,
    ScoringConfig,
    resolve_scoring,
    scoring_from_json,
)
from padformer_edge.methods.padformer.mix import Mix, mix_jobs
from padformer_edge.methods.padformer.paper_metrics import ColourMetric, PredictedFeatureMetric
from padformer_edge.model.padformer import PADFormer


def readout_of_job(job: JobScoring) -> Readout:
    """The readout a complete job's settings describe."""
    assert job.is_complete
    return Readout(bool(job.consistency_filter), float(job.sigma))  # type: ignore[arg-type]


def model_scoring(model: PADFormer) -> ScoringConfig:
    """The scoring settings ``model`` carries from its checkpoint's header (``scoring``:
    only what was validated for this very model; empty for a model with none)."""
    return scoring_from_json(model.scoring, "the model's scoring settings (checkpoint header)")


def score_scales_of(model: PADFormer) -> tuple[float, float]:
    """(LAB, feature) spreads on good views stored in an edge checkpoint (``score_scales``),
    in the order ``mix_errors`` takes them."""
    lab_scale, feature_scale = (float(v) for v in model.score_scales)
    return lab_scale, feature_scale


class FusedMetric:
    """LAB error and predicted-feature error, each divided by its spread on good views
    and mixed per job with the nearest-reference distance (see the module's docstring).

    ``scoring`` is the layer of settings given for this detection (a profile's and the
    command line's, ``DetectionSettings.scoring``); what it leaves out is the model's own
    (its checkpoint's header), else the product's: ``resolve_scoring`` stacks them.
    ``reconstruction_weight`` 0 weighs the reconstruction out (``DistanceMetric``).
    ``search`` is how the reference search runs (``distance_search.SEARCHES``: by
    device unless a test forces one).
    """

    search = "auto"

    def __init__(
        self,
        model: PADFormer,
        scoring: ScoringConfig | None = None,
        references01: list[torch.Tensor] | None = None,
        reconstruction_weight: float = 1.0,
    ) -> None:
        self.model = model
        self.reconstruction_weight = reconstruction_weight
        self.scoring = resolve_scoring(model_scoring(model), scoring)
        # one mix when both jobs take the same settings: then the errors stay [P, H, W]
        map_mix, score_mix = Mix.of_job(self.scoring.map), Mix.of_job(self.scoring.score)
        self.mixes = tuple(dict.fromkeys((map_mix, score_mix)))
        reading = [mix for mix in self.mixes if mix.reference_weight > 0]
        self.zoom = max((mix.zoom for mix in reading), default=0)  # magnifications needed
        self.turns = any(mix.turns for mix in reading)
        self.reads_references = bool(reading)
        self.banks = (
            reference_banks(model, references01, self.zoom, self.turns)
            if self.reads_references and references01 is not None
            else None
        )
        self.map_readout = readout_of_job(self.scoring.map)
        self.score_readout = readout_of_job(self.scoring.score)
        self.lab = ColourMetric("lab")
        self.feature = PredictedFeatureMetric(model)
        self.scales = score_scales_of(model)

    @property
    def input_size(self) -> int:
        """Pixels per side of the model's input: the readouts' pixel scale."""
        return self.model.config.img_size

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> tuple:
        """The LAB and feature targets, and each mix's ``[H, W]`` reference distance (None
        without a reference term): the distance does not change over passes, so it is
        read here once per query, not in ``errors`` once per chunk of passes."""
        feature = self.feature.target(query01, query_model)
        references = self.reference_maps(query01, feature)
        return self.lab.target(query01, query_model), feature, references

    def targets(self, queries01: list[torch.Tensor], queries_model: torch.Tensor) -> list[tuple]:
        """``target`` of every query of one detector call (``[1, 3, H, W]`` each, and their
        ``[B, 3, S, S]`` model inputs), the reference search taken once for all of them."""
        features = self.feature_targets(queries01, queries_model)
        references = self.batch_reference_maps(queries01, torch.cat(features))
        return [
            (self.lab.target(query, queries_model[i : i + 1]), features[i], references[i])
            for i, query in enumerate(queries01)
        ]

    def feature_targets(
        self, queries01: list[torch.Tensor], queries_model: torch.Tensor
    ) -> list[torch.Tensor]:
        """Each query's ``[1, M, F]`` frozen CNN features: one CNN call for the whole batch
        where the search is batched (CUDA), else one per query, so that on a CPU a query
        keeps the bits it gets alone."""
        if resolve_search(self.search, queries_model.device) == "batched":
            return list(self.feature.target(queries01[0], queries_model).split(1))
        return [
            self.feature.target(query, queries_model[i : i + 1])
            for i, query in enumerate(queries01)
        ]

    def reference_maps(
        self, query01: torch.Tensor, feature: torch.Tensor
    ) -> list[torch.Tensor | None]:
        """Each mix's ``[H, W]`` reference distance (None without a reference term), from
        the query and its frozen CNN features (``feature.target``)."""
        return self.batch_reference_maps([query01], feature)[0]

    def batch_reference_maps(
        self, queries01: list[torch.Tensor], features: torch.Tensor
    ) -> list[list[torch.Tensor | None]]:
        """``reference_maps`` of each query, from their ``[B, M, F]`` CNN features."""
        if not self.reads_references:
            return [[None] * len(self.mixes) for _ in queries01]
        if self.banks is None:
            raise ValueError("this fused metric weighs the references: build it with them.")
        sizes = [(query.shape[-2], query.shape[-1]) for query in queries01]
        found = batch_reference_distances(
            self.model, queries01, features, self.banks, sizes, self.search
        )
        return [mix_distances(self.mixes, distances) for distances in found]

    def batch_reference_levels(
        self, queries01: list[torch.Tensor], features: torch.Tensor
    ) -> list[list[list[torch.Tensor] | None]]:
        """Each query's reference distance per mix as one map per magnification, on that
        magnification's cells (``distance.maps.level_distances``; None for a mix that
        weighs none): what the ``distance`` metric reads, never drawn at the query's size."""
        if not self.reads_references:
            return [[None] * len(self.mixes) for _ in queries01]
        if self.banks is None:
            raise ValueError("this fused metric weighs the references: build it with them.")
        found = batch_best_cosines(self.model, queries01, features, self.banks, self.search)
        return [level_distances(self.mixes, best) for best in found]

    def errors(
        self,
        target: tuple,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        lab = self.lab.errors(target[0], recon01, size)
        feature = self.feature.errors(target[1], recon01, size, features, weights)
        return mix_jobs(
            lab, feature, self.scales, self.mixes, target[2], self.reconstruction_weight
        )
