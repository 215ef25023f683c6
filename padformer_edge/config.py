"""Pydantic schemas for every YAML file the project reads, and the strict loader.

Every schema derives from ``StrictModel``: unknown keys are errors, because a misspelt
key silently falling back to a default is the most common way a line PC ends up running
with settings nobody chose. YAML is read with ``yaml.safe_load`` semantics; the node tree
is composed as well so that a validation error can point at the line the user must edit.

Schemas register themselves with ``register_config_kind`` so that
``padformer-edge config check FILE`` can validate any of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from padformer_edge.errors import UserError

Model = TypeVar("Model", bound="StrictModel")

CONFIG_KINDS: dict[str, type[StrictModel]] = {}


class StrictModel(BaseModel):
    """Base for every config section: unknown keys are rejected, not ignored."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


def register_config_kind(name: str) -> Callable[[type[Model]], type[Model]]:
    """Class decorator that makes a top-level schema known to ``config check``."""

    def decorate(cls: type[Model]) -> type[Model]:
        CONFIG_KINDS[name] = cls
        return cls

    return decorate


KeyPath = tuple[str | int, ...]


def _record_lines(node: yaml.Node, path: KeyPath, lines: dict[KeyPath, int]) -> None:
    """Map every key path of the composed YAML tree to its 1-based line number."""
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*path, str(key_node.value))
            lines[child] = key_node.start_mark.line + 1
            _record_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            lines[child] = item.start_mark.line + 1
            _record_lines(item, child, lines)


def read_yaml(path: Path) -> tuple[dict[str, Any], dict[KeyPath, int]]:
    """Read a YAML mapping and the line of each key; raise ``UserError`` on bad syntax."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as err:
        raise UserError(f"config file {path} does not exist; check the path.") from err
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"config file {path} cannot be read ({err}); fix the file.") from err
    try:
        data = yaml.safe_load(text)
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f", line {mark.line + 1}" if mark is not None else ""
        raise UserError(
            f"{path}{where}: not valid YAML ({err.problem}); fix the syntax there."
        ) from err
    except yaml.YAMLError as err:
        raise UserError(f"{path}: not valid YAML ({err}); fix the syntax.") from err
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{path}, line 1: the top level must be a mapping of keys to values.")
    lines: dict[KeyPath, int] = {}
    if node is not None:
        _record_lines(node, (), lines)
    return data, lines


def _line_for(loc: KeyPath, lines: dict[KeyPath, int]) -> int:
    """The line of the deepest key of ``loc`` that exists in the file (1 if none does)."""
    for depth in range(len(loc), 0, -1):
        prefix = tuple(str(p) if isinstance(p, str) else p for p in loc[:depth])
        if prefix in lines:
            return lines[prefix]
    return 1


def _describe(error: dict[str, Any], model: type[BaseModel]) -> str:
    """Turn one pydantic error into the 'what is expected' half of a sentence."""
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown key; remove it or check its spelling"
    if kind == "missing":
        return "required key is missing; add it"
    message = str(error["msg"])
    message = message.removeprefix("Value error, ")
    if message.startswith("Input should be"):
        message = "expected " + message.removeprefix("Input should be ").rstrip(".")
    return message[0].lower() + message[1:] if message else kind


def format_validation_error(
    path: Path, err: ValidationError, lines: dict[KeyPath, int], model: type[BaseModel]
) -> str:
    """One sentence per problem: file, line, key path and what is expected."""
    sentences = []
    for error in err.errors():
        loc = tuple(error["loc"])
        key = ".".join(str(p) for p in loc) or "(top level)"
        line = _line_for(loc, lines)
        sentences.append(f"{path}, line {line}, key '{key}': {_describe(error, model)}.")
    return "\n".join(sentences)


def load_config(path: str | Path, model: type[Model]) -> Model:
    """Read ``path`` and validate it against ``model``; every failure is a ``UserError``."""
    path = Path(path)
    data, lines = read_yaml(path)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise UserError(format_validation_error(path, err, lines, model)) from err


def detect_config_kind(path: str | Path) -> str:
    """Guess which registered schema a file follows from its top-level keys."""
    path = Path(path)
    data, _ = read_yaml(path)
    keys = set(data)
    matches = [name for name, cls in CONFIG_KINDS.items() if keys <= set(cls.model_fields)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(CONFIG_KINDS)) or "none registered"
    if not matches:
        raise UserError(
            f"{path}: its top-level keys {sorted(keys)} match no known config kind ({known}); "
            "pass --kind to say which it is."
        )
    raise UserError(f"{path}: could be any of {sorted(matches)}; pass --kind to choose.")


def check_config(path: str | Path, kind: str | None = None) -> tuple[str, StrictModel]:
    """Validate a config file of a given (or detected) kind; returns the kind and model."""
    if kind is None:
        kind = detect_config_kind(path)
    if kind not in CONFIG_KINDS:
        known = ", ".join(sorted(CONFIG_KINDS))
        raise UserError(f"unknown config kind '{kind}'; choose one of: {known}.")
    return kind, load_config(path, CONFIG_KINDS[kind])


# --- training recipes (`padformer-edge train`) --------------------------------------------


class TrainModelSection(StrictModel):
    """Which model to train: a preset of ``padformer_edge.model`` plus field overrides."""

    preset: str = "small"
    overrides: dict[str, Any] = {}
    encoder_weights: str | None = None  # MAE .pth or timm file to start the encoder from

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, value: str) -> str:
        try:
            from padformer_edge.model import PRESETS
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
    """MSE + perceptual_weight * perceptual distance (paper Eq. for L)."""

    perceptual: Literal["efficientnet-lite0", "vgg16", "none"] = "efficientnet-lite0"
    perceptual_weight: float = Field(0.5, ge=0)
    feature_weight: float = Field(1.0, ge=0)
    """Weight of the masked-feature term (models with CNN tokens; others ignore it)."""
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
    """A training recipe for `padformer-edge train`."""

    model: TrainModelSection = TrainModelSection()
    data: TrainDataSection = TrainDataSection()
    loss: TrainLossSection = TrainLossSection()
    optim: TrainOptimSection = TrainOptimSection()
    stages: TrainStagesSection = TrainStagesSection()
    checkpoint: TrainCheckpointSection = TrainCheckpointSection()
    seed: int = 0
    device: str = "auto"
    cpu_threads: int | None = Field(None, ge=1)  # torch threads per process; None = torch's


# -- inspection profiles (padformer_edge.profiles) ----------------------------------------

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class ProfileModelRef(StrictModel):
    """The checkpoint a profile runs, pinned by content so a swapped file is noticed."""

    path: str
    sha256: str = Field(pattern=SHA256_PATTERN)


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


class ReferenceEntry(StrictModel):
    """One reference image copied into the profile, and where it came from."""

    file: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    source: str | None = None


class ReferenceSelection(StrictModel):
    """How the references were picked from the folder the operator gave."""

    method: Literal["all", "farthest-point"]
    pool_size: int = Field(ge=1)


class ScoreSummary(StrictModel):
    """Distribution of one set of calibration scores."""

    count: int = Field(ge=0)
    min: float
    max: float
    mean: float
    std: float
    p50: float
    p90: float
    p99: float


class AnomalyCheck(StrictModel):
    """What labelled anomalous images said about the chosen threshold."""

    count: int = Field(ge=1)
    scores: ScoreSummary
    recall_at_threshold: float
    precision_at_threshold: float
    f1_at_threshold: float
    f1_optimal_threshold: float
    f1_optimal: float


class CalibrationResult(StrictModel):
    """The threshold and the evidence it was set from."""

    threshold: float
    target_fpr: float = Field(gt=0.0, lt=1.0)
    good_quantile: float
    margin: float = Field(ge=0.0)
    observed_fpr: float
    good: ScoreSummary
    anomalous: AnomalyCheck | None = None
    normalise_min: float
    normalise_max: float
    model_sha256: str = Field(pattern=SHA256_PATTERN)
    calibrated_at: str
    warnings: list[str] = Field(default_factory=list)


@register_config_kind("profile")
class ProfileConfig(StrictModel):
    """``profile.yaml``: everything the daemon needs to inspect one product."""

    name: str
    created_at: str
    model: ProfileModelRef
    detection: DetectionSettings = Field(default_factory=DetectionSettings)
    references: list[ReferenceEntry] = Field(min_length=1)
    selection: ReferenceSelection
    calibration: CalibrationResult | None = None
