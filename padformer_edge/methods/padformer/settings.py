"""PADFormer's reconstruction metrics' section of the detection settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from padformer_edge.methods.padformer.fused_settings import ScoredSettings

DETECTOR_METRIC = "auto"
"""The metric PADFormer's ``Detector`` scores with when it is given no settings: the
product's default (``detect.settings.PRODUCT_METRIC``, the learned comparison) runs on
another detector, and ``auto`` is what a PADFormer model scores best by itself (the fused
score for edge models, lab otherwise)."""


class PadformerSettings(ScoredSettings):
    """``metric: auto, lab, rgb or feature``: ``scoring`` is read by ``auto`` only (the
    fused score, on models with CNN tokens); the paper's errors have no settings."""

    metric: Literal["auto", "lab", "rgb", "feature"] = Field(
        DETECTOR_METRIC,
        description="auto: the fused score for edge models, else lab; lab, rgb: the colour "
        "error; feature: the predicted-feature error",
    )

    @model_validator(mode="after")
    def _scoring_is_read(self) -> PadformerSettings:
        """Scoring settings with a metric that reads none are refused, so a profile never
        claims a setting its scores do not follow."""
        if self.scoring.changes() and self.metric != "auto":
            raise ValueError(
                f"the scoring settings tune the fused and distance readouts; metric "
                f"{self.metric} reads none of them: leave them out, or choose metric auto, "
                "fused or distance"
            )
        return self
