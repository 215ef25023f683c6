"""The ``distance`` metric's section of the detection settings."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from padformer_edge.methods.padformer.fused_settings import ScoredSettings


class DistanceSettings(ScoredSettings):
    """``metric: distance``: the nearest-reference distance alone, its readout as
    ``scoring`` sets it (the reference weight is its own)."""

    metric: Literal["distance"] = Field("distance", description="the distance alone")
