"""The comparator's training recipe: a strict YAML schema, every key with its default.

Registered as the ``comparator`` kind of ``padformer-edge config check`` and of the
configuration reference; ``padformer-edge train`` reads a recipe's ``kind`` to know that it
trains the comparator rather than PADFormer. Nothing here imports torch, so checking a
recipe stays instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from padformer_edge.config import StrictModel, load_config, register_config_kind
from padformer_edge_training.comparator.anomaly_kinds import (
    ALL_KINDS,
    DEFAULT_KINDS,
    unknown_kinds,
)

if TYPE_CHECKING:
    from padformer_edge.methods.compare.model import ComparatorConfig


class ComparatorDataSection(StrictModel):
    """The render of many procedural objects the comparator learns from."""

    root: Path = Path("data/comparator-train")
    min_good: int = Field(13, ge=2, description="objects with fewer good views are skipped")
    max_good: int | None = Field(
        16, ge=2, description="good views per object kept as references and queries"
    )


class ComparatorModelSection(StrictModel):
    """The comparator's shape (``padformer_edge.methods.compare.model.ComparatorConfig``)."""

    input_size: int = Field(192, ge=64, multiple_of=8)
    dim: int = Field(96, ge=16, multiple_of=4)
    depth: int = Field(2, ge=0)
    heads: int = Field(4, ge=1)
    top_k: int = Field(8, ge=1)
    aligned_k: int = Field(0, ge=0, description="STN-aligned keys; they need optim.window null")
    use_stn: bool = False
    neighbourhood: int = Field(
        1, ge=1, description="side of the mean over neighbouring cells (odd; 1: none)"
    )

    @field_validator("neighbourhood")
    @classmethod
    def _odd(cls, side: int) -> int:
        if side % 2 == 0:
            raise PydanticCustomError(
                "even_neighbourhood", "the neighbourhood is centred on its cell: 1, 3 or 5"
            )
        return side

    stages: list[int] = Field(
        default_factory=lambda: [2],
        min_length=1,
        description="CNN blocks stacked into a cell: [2] (stride 8) or [2, 3] (and stride 16)",
    )

    @field_validator("stages")
    @classmethod
    def _known_stages(cls, stages: list[int]) -> list[int]:
        if sorted(set(stages)) not in ([2], [2, 3]):
            raise PydanticCustomError("stages", "the stages are [2] or [2, 3]")
        return sorted(set(stages))

    def config(self) -> ComparatorConfig:
        from padformer_edge.methods.compare.model import ComparatorConfig
        from padformer_edge.model.config import BACKBONES, DEFAULT_BACKBONE

        fields = self.model_dump() | {"stages": tuple(self.stages)}
        channels = BACKBONES[DEFAULT_BACKBONE].stage_channels(fields["stages"])
        return ComparatorConfig(**fields, channels=channels)


class ComparatorEpisodeSection(StrictModel):
    """How often each kind of query is drawn, and the reference counts trained on."""

    good: float = Field(0.3, ge=0)
    rendered: float = Field(0.3, ge=0)
    synthetic: float = Field(0.4, ge=0)
    reference_counts: list[int] = Field(default_factory=lambda: [4, 4, 8, 12], min_length=1)
    synthetic_kinds: list[str] = Field(
        default_factory=lambda: list(DEFAULT_KINDS),
        min_length=1,
        description="image-space anomaly kinds of the synthetic queries; repeat one to draw "
        "it more often",
    )

    @field_validator("synthetic_kinds")
    @classmethod
    def _known_kinds(cls, kinds: list[str]) -> list[str]:
        unknown = unknown_kinds(kinds)
        if unknown:
            raise PydanticCustomError(
                "unknown_anomaly_kind",
                "'{kind}' is no image-space anomaly kind; the kinds are {known}",
                {"kind": unknown[0], "known": ", ".join(ALL_KINDS)},
            )
        return kinds


class ComparatorOptimSection(StrictModel):
    """AdamW with a linear warm-up and a cosine to ``min_lr``; the loss's image weight."""

    steps: int = Field(3000, ge=1)
    batch_size: int = Field(8, ge=1)
    lr: float = Field(3e-4, gt=0)
    min_lr: float = Field(1e-6, ge=0)
    warmup_steps: int = Field(100, ge=0)
    weight_decay: float = Field(0.05, ge=0)
    grad_clip: float = Field(1.0, gt=0)
    image_weight: float = Field(2.0, ge=0)
    image_top_k: int = Field(
        1, ge=1, description="cells whose mean logit is the image's logit; 1: the maximum"
    )
    window: int | None = Field(
        16, ge=4, description="query cells per side read per episode; null: the whole grid"
    )


class ComparatorCheckpointSection(StrictModel):
    """Where the run writes its weights, resume points and kept snapshots."""

    out: Path = Path("runs/comparator")
    every_steps: int = Field(50, ge=1, description="resume point every N steps")
    keep_every: int = Field(500, ge=1, description="a kept snapshot every N steps")


@register_config_kind("comparator")
class ComparatorRecipe(StrictModel):
    """A comparator training recipe for `padformer-edge train` (``kind: comparator``)."""

    kind: Literal["comparator"] = Field(
        description="what `padformer-edge train` trains: this recipe trains the comparator"
    )
    data: ComparatorDataSection = Field(default_factory=ComparatorDataSection)
    model: ComparatorModelSection = Field(default_factory=ComparatorModelSection)
    episodes: ComparatorEpisodeSection = Field(default_factory=ComparatorEpisodeSection)
    optim: ComparatorOptimSection = Field(default_factory=ComparatorOptimSection)
    checkpoint: ComparatorCheckpointSection = Field(default_factory=ComparatorCheckpointSection)
    seed: int = 0
    cpu_threads: int = Field(2, ge=1)
    device: str = Field("auto", description="auto, cpu, cuda or cuda:N; `train --device` wins")


def load_recipe(path: Path) -> ComparatorRecipe:
    """The recipe in ``path``, or one sentence naming the file, the line and the bad key."""
    return load_config(path, ComparatorRecipe)
