"""The ``fused`` metric's section of the detection settings, and the base of every section
that reads the fused score's settings (``distance``, PADFormer's ``auto``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_serializer

from padformer_edge.detect.settings import MethodSettings
from padformer_edge.methods.padformer.fused_scoring import ScoringConfig

SCORING_HELP = (
    "the fused and distance metrics' settings, each job's keys optional: what is left out "
    "is the model's own (its checkpoint), else the product's; the command line's --scoring "
    "JOB.KEY=VALUE goes over a profile's"
)


class ScoredSettings(MethodSettings):
    """A section whose metric reads the fused score's settings (``scoring``)."""

    scoring: ScoringConfig = Field(default_factory=ScoringConfig, description=SCORING_HELP)

    @field_serializer("scoring")
    def _set_scoring_only(self, scoring: ScoringConfig) -> dict[str, Any]:
        """Only the values set: a profile file does not spell out a dozen nulls."""
        return scoring.changes()


class FusedSettings(ScoredSettings):
    """``metric: fused``: PADFormer's errors mixed with the nearest-reference distance, as
    ``scoring`` sets them."""

    metric: Literal["fused"] = Field("fused", description="the fused score")
