"""PADFormer's metrics by name, and the signature each records: the paper's colour and
feature errors (``paper_metrics``), the ``fused`` mix (``fused_metric``) and the
distance alone (``distance_metric``). The learned comparison reads no PADFormer and is
a method of its own (``methods.compare``).
"""

from __future__ import annotations

import torch

from padformer_edge.detect.signature import Signature, readout_jobs
from padformer_edge.errors import UserError
from padformer_edge.methods.padformer.distance_metric import DistanceMetric
from padformer_edge.methods.padformer.fused_metric import FusedMetric
from padformer_edge.methods.padformer.fused_scoring import ScoringConfig
from padformer_edge.methods.padformer.paper_metrics import (
    ColourMetric,
    ErrorMetric,
    FeatureMetric,
    PredictedFeatureMetric,
)
from padformer_edge.model.padformer import PADFormer


def build_metric(
    name: str,
    model: PADFormer,
    references01: list[torch.Tensor] | None = None,
    scoring: ScoringConfig | None = None,
) -> ErrorMetric:
    """The metric called ``name``; an unknown name is a user error. ``references01``
    (``[3, H, W]`` each, in [0, 1]) are the references, for a metric that reads them
    itself; without them the metric can still name its scoring (``scoring_signature``).
    ``scoring`` is the fused settings given for this detection, over the model's own.
    ``compare`` is not one of them: ``methods.registry`` gives it its own detector."""
    if name in ("lab", "rgb"):
        return ColourMetric(name)  # type: ignore[arg-type]
    cnn = model.config.cnn_tokens
    if name == "feature":
        return PredictedFeatureMetric(model) if cnn else FeatureMetric(model)
    reference_metrics = {"fused": FusedMetric, "distance": DistanceMetric}
    if name in reference_metrics:
        if not cnn:
            raise UserError(
                f"the {name} metric needs a model with CNN tokens (preset 'edge'); "
                f"this is a '{model.preset_name}' model: use --metric lab."
            )
        return reference_metrics[name](model, scoring, references01)
    # a metric of another method (methods.registry), which never reaches this detector
    raise ValueError(f"metric {name} is not scored by the PADFormer detector")


def default_metric(model: PADFormer) -> str:
    """``fused`` for models that can compute it, the paper's ``lab`` otherwise."""
    return "fused" if model.config.cnn_tokens else "lab"


def resolve_metric(
    setting: str,
    model: PADFormer,
    references01: list[torch.Tensor] | None = None,
    scoring: ScoringConfig | None = None,
) -> tuple[str, ErrorMetric]:
    """(name, metric) for a detection setting's ``metric`` (``auto`` picks the default)."""
    name = default_metric(model) if setting == "auto" else setting
    return name, build_metric(name, model, references01, scoring)


def scoring_signature(name: str, metric: ErrorMetric) -> Signature:
    """How the PADFormer ``metric`` (called ``name``) computes its scores, as a JSON-ready
    dict (``detect.signature``)."""
    jobs = readout_jobs(metric.map_readout, metric.score_readout)
    hidden_only = False
    if isinstance(metric, FusedMetric):
        reads_reconstruction = not isinstance(metric, DistanceMetric)
        for job, mix in zip(jobs, (metric.mixes[0], metric.mixes[-1]), strict=True):
            jobs[job] = {**mix.signature(reads_reconstruction), **jobs[job]}
        hidden_only = reads_reconstruction and metric.model.config.score_masked_cells
    elif isinstance(metric, PredictedFeatureMetric):
        hidden_only = metric.model.config.score_masked_cells
    return {"metric": name, **jobs, "hidden_patches_only": hidden_only}
