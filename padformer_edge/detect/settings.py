"""The settings a ``Detector`` runs with, declared once for every way of choosing them.

A profile's ``detection:`` section, the CLI options of ``detect`` and ``profile create``
and the evaluation all fill this one schema, so the names, defaults and limits cannot
drift apart. It imports no torch, so the CLI can declare its options from it cheaply.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from padformer_edge.config import StrictModel


class DetectionSettings(StrictModel):
    """How a profile's images are scored; the defaults are the paper's inference settings."""

    passes: int = Field(15, ge=2)
    mask_ratio: float = Field(0.4, gt=0.0, lt=1.0)
    schedule: Literal["random", "balanced"] = "random"
    metric: Literal["auto", "lab", "rgb", "feature", "fused"] = "auto"
    seed: int = 0
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16", "fp16"] = "fp32"
    max_batch: int = Field(32, ge=1)
