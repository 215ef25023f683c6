"""The settings a ``Detector`` runs with, declared once for every way of choosing them.

A profile's ``detection:`` section, the CLI options of ``detect``, ``profile create`` and
``eval``, and the benchmarks all build this one frozen object and hand it whole to the
``Detector``; nothing re-declares a default or re-checks a limit on the way. Its words
(schedules, devices, precisions) are declared here too, and the modules that implement
them import them from here.

What only one scoring method reads (compare's comparator, the fused score's settings) is
that method's own section (``MethodSettings``), declared in its package and chosen by the
metric: a discriminated union, keyed by ``metric``, whose members the methods register
(``methods.registry.register``), so this module names no method's field. A file and the
command line spell a section's keys beside the shared ones (``detection.comparator``), as
every earlier version wrote them. It imports no torch, so the CLI can declare its options
from it without loading the model.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from pydantic import (
    ConfigDict,
    Field,
    SerializeAsAny,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)

from padformer_edge.config import StrictModel
from padformer_edge.devices.runtimes import DeviceName, RuntimeName

MaskSchedule = Literal["random", "balanced"]
Precision = Literal["fp32", "bf16", "fp16"]
MASK_SCHEDULES: tuple[str, ...] = get_args(MaskSchedule)
PRECISIONS: tuple[str, ...] = get_args(Precision)

PRODUCT_METRIC = "compare"
"""The metric when none is given (``DetectionSettings()``, ``detect``, ``profile create``,
``eval``, the demo with the shipped model): the learned comparison, chosen on the
validation render over the fused score and the distance alone at 4 and at 12 references
(docs/research.md#comparator). A profile file keeps the metric it was made with, so
profiles written with ``auto`` (the fused score for edge models) keep their scores."""

MIN_PASSES = 2
"""The variance filter compares passes; with one there is no variance to filter by."""

EXPORT_FIELDS = ("passes", "mask_ratio", "schedule", "seed", "metric")
"""The detection settings a line export is made for, recorded in its scoring file: a
profile whose settings differ in any of them needs another export."""


class MethodSettings(StrictModel):
    """One scoring method's section of the detection settings: the base each method's own
    model extends, with ``metric`` narrowed to the words it scores (a ``Literal``), so the
    metric picks the section. Frozen, as the settings that hold it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: str = Field(
        min_length=1,
        description="what scores the images: one of the metrics the scoring methods list "
        "(docs/methods.md)",
    )

    @classmethod
    def metrics(cls) -> tuple[str, ...]:
        """The metrics this section is chosen by: the words of its ``metric`` annotation."""
        return tuple(get_args(cls.model_fields["metric"].annotation))

    @classmethod
    def from_earlier(cls, section: dict[str, Any], recorded: Any) -> dict[str, Any]:
        """``section`` (a profile file's keys of this method) with what a file written by
        an earlier version left out filled in, from the scoring signature its calibration
        recorded (``recorded``; None when it has none): as given, unless a method says
        otherwise."""
        return section

    def weights_sha256(self) -> str | None:
        """The sha256 of weights of the method's own that this section names (``compare``'s
        comparator), which a profile records in place of a PADFormer checkpoint; None
        for a method that scores with the profile's checkpoint."""
        return None


class SectionTable:
    """The method sections by metric: filled by ``methods.registry`` (each method names
    its section), read whenever a ``DetectionSettings`` is validated, so a method
    registered at run time is read from files and options at once."""

    def __init__(self) -> None:
        self._by_metric: dict[str, type[MethodSettings]] = {}

    def add(self, section: type[MethodSettings]) -> None:
        """Choose ``section`` by each of its metrics; a metric two sections claim, or a
        key that a shared setting already has, is refused."""
        shared = set(DetectionSettings.model_fields) - {"section"}
        clashing = shared & set(section.model_fields)
        if clashing:
            raise ValueError(f"{section.__name__} redeclares shared setting {sorted(clashing)}")
        for metric in section.metrics():
            if self._by_metric.get(metric, section) is not section:
                raise ValueError(f"metric '{metric}' already has a section")
        self._by_metric |= dict.fromkeys(section.metrics(), section)

    def remove(self, section: type[MethodSettings]) -> None:
        """Choose ``section`` by no metric any more (``methods.registry.unregister``)."""
        for metric in section.metrics():
            if self._by_metric.get(metric) is section:
                del self._by_metric[metric]

    def of(self, metric: str) -> type[MethodSettings]:
        """The section ``metric`` chooses, or a ``ValueError`` naming the metrics."""
        if not self._by_metric:  # the table is filled from above, never from here
            raise ValueError(
                f"metric '{metric}' is unknown: no scoring method is registered yet; import "
                "padformer_edge.methods first (its registry registers the product's)"
            )
        if metric not in self._by_metric:
            known = ", ".join(self._by_metric)
            raise ValueError(f"metric '{metric}' is unknown; choose one of {known}")
        return self._by_metric[metric]

    def readers(self, key: str, value: Any) -> list[str]:
        """The metrics whose section takes setting ``key`` at ``value``."""
        found = []
        for metric, section in self._by_metric.items():
            try:
                section.model_validate({"metric": metric, key: value})
            except ValidationError:
                continue
            found.append(metric)
        return found


SECTIONS = SectionTable()
"""The one table of method sections (``methods.registry`` fills it)."""


def _section_of(value: Any) -> MethodSettings:
    """The section of ``value``'s metric (``SECTIONS``), validated; a key it does not read
    is refused in one sentence naming the metrics that do, and a bad value in one naming
    its key."""
    if not isinstance(value, dict):
        raise ValueError("the method's settings are a mapping of its keys")
    kind = SECTIONS.of(str(value.get("metric")))
    value = _without_empty_strays(value, kind)
    for key in value:
        if key not in kind.model_fields:
            readers = " or ".join(SECTIONS.readers(key, value[key]))
            fix = f"or choose metric {readers}" if readers else "no metric reads it"
            raise ValueError(
                f"metric {value['metric']} reads no setting '{key}': leave {key} out, {fix}"
            )
    try:
        return kind.model_validate(value)
    except ValidationError as err:  # one sentence, not the section's whole report
        problem = err.errors()[0]
        where = ".".join(str(part) for part in problem["loc"])
        text = str(problem["ctx"].get("error", "")) if "ctx" in problem else ""
        if not where:  # a rule of the section across its keys
            raise ValueError(text or problem["msg"]) from None
        given = f", given {problem['input']!r}" if "input" in problem else ""
        raise ValueError(f"{where}: {problem['msg'].lower()}{given}") from None


def _without_empty_strays(section: dict[str, Any], kind: type[MethodSettings]) -> dict[str, Any]:
    """``section`` less the keys ``kind`` lacks whose value is empty (null, ``{}``):
    earlier versions wrote every method's keys into every profile, unset."""
    return {
        key: value
        for key, value in section.items()
        if key in kind.model_fields or value not in (None, {}, [])
    }


class DetectionSettings(StrictModel):
    """How images are scored; the defaults are the paper's inference settings.

    Frozen: a detector's settings cannot change under it, and one object can be shared
    by a profile, its detector and the records that describe a run. ``section`` is the
    section of the metric's own method, its keys written beside these.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    passes: int = Field(15, ge=MIN_PASSES, description="masked reconstruction passes per image")
    mask_ratio: float = Field(0.4, gt=0.0, lt=1.0, description="share of patches hidden")
    schedule: MaskSchedule = "random"
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
    section: SerializeAsAny[MethodSettings] = Field(
        default_factory=lambda: SECTIONS.of(PRODUCT_METRIC)(metric=PRODUCT_METRIC),
        description="the metric and its method's settings, written beside the keys above "
        "(docs/methods.md lists each method's)",
    )

    @model_validator(mode="before")
    @classmethod
    def _split_the_method_keys(cls, data: Any) -> Any:
        """Flat keys (a file's, the CLI's, ``replace``'s) into the shared settings and the
        section of the metric's method (``metric`` absent: ``PRODUCT_METRIC``), which is
        validated here so that a problem names the file's own keys (``detection``, not a
        ``section`` no file has)."""
        if not isinstance(data, dict):
            return data
        if "section" in data:
            section = data["section"]
            if isinstance(section, MethodSettings):  # already validated
                return data
            shared = {key: value for key, value in data.items() if key != "section"}
        else:
            shared = {key: value for key, value in data.items() if key in cls.model_fields}
            section = {key: value for key, value in data.items() if key not in cls.model_fields}
            section.setdefault("metric", PRODUCT_METRIC)
        return {**shared, "section": _section_of(section)}

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """The section's keys beside the shared ones, as files have always held them."""
        dumped = handler(self)
        return {**{k: v for k, v in dumped.items() if k != "section"}, **dumped["section"]}

    @model_validator(mode="after")
    def _settings_fit(self) -> DetectionSettings:
        """Runtimes asked for more than their graphs do are refused rather than quietly
        ignored: the exported graphs are float32, and OpenVINO runs them on the CPU only
        (onnxruntime also on a CUDA GPU, through onnxruntime-gpu). What a metric's method
        reads is its section's to check."""
        if self.runtime != "torch" and self.precision != "fp32":
            raise ValueError(f"runtime {self.runtime} runs the fp32 graphs; use precision fp32")
        if self.runtime == "openvino" and self.device == "cuda":
            raise ValueError(
                "runtime openvino runs on the CPU; use device auto or cpu, or runtime "
                "onnxruntime (with onnxruntime-gpu) on a CUDA GPU"
            )
        return self

    @property
    def metric(self) -> str:
        """What scores the images: the method section's metric."""
        return self.section.metric

    def replace(self, **changes: Any) -> DetectionSettings:
        """A validated copy with ``changes`` applied (``model_copy`` would not validate);
        for another metric whose method has another section, the settings that section
        also has are kept and the others left behind."""
        current = self.model_dump()
        kind = SECTIONS.of(changes.get("metric", self.metric))
        if kind is not type(self.section):
            shared = set(type(self).model_fields) | set(kind.model_fields)
            current = {key: value for key, value in current.items() if key in shared}
        return DetectionSettings.model_validate({**current, **changes})

    def with_metric(self, metric: str) -> DetectionSettings:
        """These shared settings with ``metric``, its method's section at its defaults."""
        shared = {key: getattr(self, key) for key in type(self).model_fields if key != "section"}
        return DetectionSettings.model_validate({**shared, "metric": metric})

    def export_settings(self) -> dict[str, Any]:
        """The settings a line export records and is checked against (``EXPORT_FIELDS``)."""
        return {field: getattr(self, field) for field in EXPORT_FIELDS}
