"""The training recipe schema (``padformer-edge train RECIPE.yaml``), beside the trainer.

Registered as the ``train`` kind of ``padformer-edge config check``; the strict loader
itself lives in ``padformer_edge.config``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from padformer_edge.config import StrictModel, register_config_kind


class TrainModelSection(StrictModel):
    """Which model to train: a preset of ``padformer_edge.model`` plus field overrides."""

    preset: str = "small"
    overrides: dict[str, Any] = Field(default_factory=dict)
    init_overrides: dict[str, Any] = Field(default_factory=dict)
    """Config fields changed on top of an ``--init`` checkpoint's own (which otherwise
    replaces ``preset`` and ``overrides``): switches that keep the weights' shapes, such as
    the training mask or the decoder's isolation, so a shipped model can be taught them."""
    encoder_weights: str | None = None  # MAE .pth or timm file to start the encoder from

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        try:
            from padformer_edge.model.config import PRESETS
        except ImportError:  # the model package is optional for validating the file alone
            return value
        if value not in PRESETS:
            raise ValueError(f"unknown preset '{value}'; choose one of: {', '.join(PRESETS)}")
        return value


class TrainDataSection(StrictModel):
    """Where the good images are and how many references each query gets."""

    root: str | None = None
    layout: Literal["auto", "mad-sim", "mvtec", "visa", "folder"] = "auto"
    categories: list[str] | None = None
    split_csv: str | None = None
    num_refs: int | Literal["all"] = 4
    num_workers: int = Field(2, ge=0)

    @field_validator("num_refs")
    @classmethod
    def _positive(cls, value: int | str) -> int | str:
        if isinstance(value, int) and value < 1:
            raise ValueError("num_refs must be at least 1 or 'all'")
        return value


class TrainLossSection(StrictModel):
    """MSE + perceptual_weight * perceptual distance (paper Eq. for L); CNN-token models
    add the feature term and, for a reference pointer, the match term."""

    perceptual: Literal["efficientnet-lite0", "vgg16", "none"] = "efficientnet-lite0"
    perceptual_weight: float = Field(0.5, ge=0)
    feature_weight: float = Field(1.0, ge=0)
    """Weight of the masked-feature term (models with CNN tokens; others ignore it)."""
    unseen_share: float = Field(0.0, ge=0.0, lt=1.0)
    """Share of each query's masked cells left out of the feature term: those whose
    frozen feature lies farthest from every reference cell, which no reference shows (the
    far side of the part), so the decoder is not taught to invent what it cannot read."""
    match_weight: float = Field(0.0, ge=0)
    """Weight of the match term (models whose ``feature_readout`` is ``references``; 0 =
    off): cross-entropy of the pointer's scores against the reference patch whose frozen
    feature is nearest (cosine) to each hidden patch's own, over the cells the feature term
    scores, so the pointer learns which patch to read instead of a blend."""
    match_temperature: float = Field(0.0, ge=0)
    """0: the nearest reference patch is the one target; above 0 the target is the softmax
    of the cosines divided by it, so near-equal matches share the credit."""
    match_min_cosine: float = Field(0.0, ge=-1.0, le=1.0)
    """Hidden patches whose best cosine to any reference patch is below this are left out
    of the match term: no reference shows them, so no choice is right."""
    vgg16_weights: str | None = None


class TrainOptimSection(StrictModel):
    """AdamW with linear warmup then cosine decay, per stage; clipping and accumulation."""

    lr: float = Field(4e-4, gt=0)
    min_lr: float = Field(0.0, ge=0)
    weight_decay: float = Field(0.05, ge=0)
    betas: tuple[float, float] = (0.9, 0.95)
    warmup_steps: int = Field(2500, ge=0)
    grad_clip: float = Field(1.0, ge=0)
    batch_size: int = Field(8, ge=1)
    accumulate: int = Field(1, ge=1)
    amp: Literal["auto", "bf16", "fp16", "off"] = "auto"


class TrainStageSection(StrictModel):
    """One training stage; 0 epochs skips it."""

    epochs: int = Field(ge=0)


class WithinViewStageSection(TrainStageSection):
    """The within-view stage and how references are made from the query itself."""

    max_rotation: float = Field(30.0, ge=0, le=180)
    elastic_strength: float = Field(0.02, ge=0, le=0.2)
    elastic_scale: float = Field(0.08, gt=0, le=0.5)


class TrainStagesSection(StrictModel):
    """Within-view pre-training, then cross-view training (paper: 50 then 250 epochs)."""

    within_view: WithinViewStageSection = WithinViewStageSection(epochs=50)
    cross_view: TrainStageSection = TrainStageSection(epochs=250)


class TrainCheckpointSection(StrictModel):
    """Where and how often the run writes weights and its resume point."""

    out: str = "runs/train"
    every_steps: int = Field(1000, ge=1)


@register_config_kind("train")
class TrainConfig(StrictModel):
    """A PADFormer training recipe for `padformer-edge train` (``kind: padformer``, the
    default; a comparator recipe says ``kind: comparator``)."""

    kind: Literal["padformer"] = Field(
        "padformer", description="what `padformer-edge train` trains: PADFormer"
    )
    model: TrainModelSection = TrainModelSection()
    data: TrainDataSection = TrainDataSection()
    loss: TrainLossSection = TrainLossSection()
    optim: TrainOptimSection = TrainOptimSection()
    stages: TrainStagesSection = TrainStagesSection()
    checkpoint: TrainCheckpointSection = TrainCheckpointSection()
    seed: int = 0
    device: str = "auto"
    cpu_threads: int | None = Field(None, ge=1)  # torch threads per process; None = torch's
