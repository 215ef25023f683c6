"""The ``distance`` metric in the registry: PADFormer's detector and graphs, no pass."""

from __future__ import annotations

from padformer_edge.methods.padformer.distance_settings import DistanceSettings
from padformer_edge.methods.padformer.method import PadformerMethod


class DistanceMethod(PadformerMethod):
    """The nearest-reference distance alone: per stride-8 cell of PADFormer's frozen CNN,
    one minus the best cosine to any cell of any reference (upright, and turned where the
    model's settings say), with no reconstruction pass (``distance_metric.DistanceMetric``). It is
    the floor a reconstruction must beat and the fastest PADFormer score; it needs a model
    with CNN tokens, and on a line runs the exported feature graph only."""

    name = "distance"
    metrics = ("distance",)
    settings_type = DistanceSettings


DISTANCE = DistanceMethod()
