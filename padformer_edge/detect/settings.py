"""The settings a ``Detector`` runs with, declared once for every way of choosing them.

A profile's ``detection:`` section, the CLI options of ``detect``, ``profile create`` and
``eval``, and the benchmarks all build this one frozen object and hand it whole to the
``Detector``; nothing re-declares a default or re-checks a limit on the way. Its words
(schedules, devices, precisions) are declared here too, and the modules that implement
them import them from here. The metric is the exception: its words are the scoring
methods' (``methods.registry.METRICS``), which a profile file and the CLI check through
``methods.registry.check_settings``, so a new method adds its metric in its own package.
It imports no torch, so the CLI can declare its options from it without loading the model.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import ConfigDict, Field, field_serializer, model_validator

from padformer_edge.config import StrictModel
from padformer_edge.detect.scoring_config import ScoringConfig
from padformer_edge.devices.runtimes import DeviceName, RuntimeName

MaskSchedule = Literal["random", "balanced"]
Precision = Literal["fp32", "bf16", "fp16"]
MASK_SCHEDULES: tuple[str, ...] = get_args(MaskSchedule)
PRECISIONS: tuple[str, ...] = get_args(Precision)

PRODUCT_METRIC = "compare"
"""The metric a command uses when none is given (``detect``, ``profile create``, ``eval``,
the demo with the shipped model): the learned comparison, chosen on the validation render
over the fused score and the distance alone at 4 and at 12 references
(docs/research.md#comparator). A profile file keeps the metric it was made with, so
profiles written with ``auto`` (the fused score for edge models) keep their scores."""

MIN_PASSES = 2
"""The variance filter compares passes; with one there is no variance to filter by."""


class DetectionSettings(StrictModel):
    """How images are scored; the defaults are the paper's inference settings.

    Frozen: a detector's settings cannot change under it, and one object can be shared
    by a profile, its detector and the records that describe a run.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    passes: int = Field(15, ge=MIN_PASSES, description="masked reconstruction passes per image")
    mask_ratio: float = Field(0.4, gt=0.0, lt=1.0, description="share of patches hidden")
    schedule: MaskSchedule = "random"
    metric: str = Field(
        "auto",
        min_length=1,
        description=(
            "what scores the images: one of the metrics the scoring methods list "
            "(docs/methods.md). auto: fused for edge models, else lab; distance: the "
            "nearest-reference distance alone, with no reconstruction pass (edge models; the "
            "fast choice for a weak CPU); compare: that distance plus the shipped "
            "comparator's learned correction, with no reconstruction pass (any model)"
        ),
    )
    seed: int = Field(0, description="seed of the mask schedule")
    device: DeviceName = "auto"
    precision: Precision = "fp32"
    max_batch: int = Field(32, ge=1, description="most passes per model call")
    runtime: RuntimeName = Field(
        "torch",
        description=(
            "what runs the model: torch, or onnxruntime or openvino on graphs written by "
            "padformer-edge export (fp32; openvino on the CPU, onnxruntime also on a CUDA "
            "GPU with onnxruntime-gpu); both also run a profile's graphs from profile "
            "export, scored in numpy with no torch needed"
        ),
    )
    comparator: str | None = Field(
        None,
        description=(
            "the sha256 of the comparator the compare metric reads: a profile records the "
            "shipped default when it is made, so a later default leaves its scores as they "
            "were (doctor says how to move it); none: the shipped default"
        ),
    )
    scoring: ScoringConfig = Field(
        default_factory=ScoringConfig,
        description=(
            "the fused and distance metrics' settings, each job's keys optional: what is "
            "left out is the model's own (its checkpoint), else the product's; the command "
            "line's --scoring JOB.KEY=VALUE goes over a profile's"
        ),
    )

    @field_serializer("scoring")
    def _set_scoring_only(self, scoring: ScoringConfig) -> dict[str, Any]:
        """Only the values set: a profile file does not spell out a dozen nulls."""
        return scoring.changes()

    @model_validator(mode="after")
    def _settings_fit(self) -> DetectionSettings:
        """Runtimes asked for more than their graphs do are refused rather than quietly
        ignored: the exported graphs are float32, and OpenVINO runs them on the CPU only
        (onnxruntime also on a CUDA GPU, through onnxruntime-gpu). What a metric's method
        reads (a comparator, scoring settings) is its registry entry's to check
        (``methods.registry.check_settings``)."""
        if self.runtime != "torch" and self.precision != "fp32":
            raise ValueError(f"runtime {self.runtime} runs the fp32 graphs; use precision fp32")
        if self.runtime == "openvino" and self.device == "cuda":
            raise ValueError(
                "runtime openvino runs on the CPU; use device auto or cpu, or runtime "
                "onnxruntime (with onnxruntime-gpu) on a CUDA GPU"
            )
        return self

    def replace(self, **changes: Any) -> DetectionSettings:
        """A validated copy with ``changes`` applied (``model_copy`` would not validate)."""
        return DetectionSettings.model_validate({**self.model_dump(), **changes})
