"""The ``fused`` metric in the registry: PADFormer's detector and graphs, this metric."""

from __future__ import annotations

from padformer_edge.methods.padformer.fused_settings import FusedSettings
from padformer_edge.methods.padformer.method import PadformerMethod


class FusedMethod(PadformerMethod):
    """PADFormer's LAB and predicted-feature errors, each divided by its spread on good
    views, mixed per pass with the nearest-reference distance, and read once for the map
    and once for the image score with the settings validated for the model
    (``fused_metric.FusedMetric``). It needs a model with CNN tokens and runs on PADFormer's
    passes, checkpoint, reference encodings and exported graphs."""

    name = "fused"
    metrics = ("fused",)
    settings_type = FusedSettings


FUSED = FusedMethod()
