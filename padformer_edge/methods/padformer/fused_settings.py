"""The ``fused`` metric's section of the detection settings, and the base of every section
that reads the fused score's settings (``distance``, PADFormer's ``auto``)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_serializer, field_validator

from padformer_edge.detect.settings import MethodSettings
from padformer_edge.methods.padformer.fused_scoring import ScoringConfig, scoring_changes

SCORING_HELP = (
    "the fused and distance metrics' settings, each job's keys optional: what is left out "
    "is the model's own (its checkpoint), else the product's; the command line's --scoring "
    "JOB.KEY=VALUE goes over a profile's"
)


class ScoredSettings(MethodSettings):
    """A section whose metric reads the fused score's settings (``scoring``)."""

    scoring: ScoringConfig = Field(default_factory=ScoringConfig, description=SCORING_HELP)

    @field_validator("scoring", mode="before")
    @classmethod
    def _read_option_items(cls, value: Any) -> Any:
        """The command line's ``--scoring JOB.KEY=VALUE`` items (a list of strings) read
        here, by the method that owns them, so the CLI hands them over unread and imports
        no method; a file's nested mapping passes through. A malformed item is a
        ``UserError`` naming it (``scoring_changes``)."""
        if isinstance(value, list | tuple) and all(isinstance(item, str) for item in value):
            return scoring_changes(value)
        return value

    @field_serializer("scoring")
    def _set_scoring_only(self, scoring: ScoringConfig) -> dict[str, Any]:
        """Only the values set: a profile file does not spell out a dozen nulls."""
        return scoring.changes()


class FusedSettings(ScoredSettings):
    """``metric: fused``: PADFormer's errors mixed with the nearest-reference distance, as
    ``scoring`` sets them."""

    metric: Literal["fused"] = Field("fused", description="the fused score")
