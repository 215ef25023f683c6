"""The ``profile.yaml`` schema, beside the code that reads and writes profiles.

Registered as the ``profile`` kind of ``padformer-edge config check``. Its detection
section is the detector's own settings object (``detect.settings``), so a profile can
hold nothing the detector would not accept; the keys of a metric's method are its section,
declared in its package (``methods.registry`` registers the sections).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from padformer_edge.config import StrictModel, register_config_kind
from padformer_edge.detect.settings import PRODUCT_METRIC, DetectionSettings
from padformer_edge.methods.registry import method_for

SHA256_PATTERN = r"^[0-9a-f]{64}$"


class ProfileModelRef(StrictModel):
    """The checkpoint a profile runs, pinned by content so a swapped file is noticed."""

    path: str
    sha256: str = Field(pattern=SHA256_PATTERN)


class WeightsRef(StrictModel):
    """The weights a method that reads no PADFormer scores with (``compare``'s
    comparator), recorded in place of a checkpoint it would never read: their card's name
    for people, their sha256 (the one the method's section names) for what scored."""

    name: str
    sha256: str = Field(pattern=SHA256_PATTERN)


class ReferenceEntry(StrictModel):
    """One reference image copied into the profile, and where it came from."""

    file: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    source: str | None = None


class BackgroundEntry(StrictModel):
    """The photo of the camera's empty belt copied into the profile (``profile create
    --background``): with it, each frame's part is found and its crop is scored."""

    file: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    source: str | None = None


FramePixel = Annotated[float, Field(ge=0.0, allow_inf_nan=False)]
"""A coordinate in the camera's frame, in pixels from its top-left corner."""


class IgnoreRegion(StrictModel):
    """A part of the camera's frame the score ignores (a fixture, a label on the belt, a
    date stamp): a polygon in frame pixels, named so the heatmap and the logs can say
    which. The frame is the camera's whole picture, as the references show it."""

    name: str = Field(min_length=1, max_length=64)
    points: list[tuple[FramePixel, FramePixel]] = Field(min_length=3)
    """The polygon's corners as ``[x, y]`` pairs, in order around it."""

    @field_validator("points")
    @classmethod
    def _encloses_area(cls, points: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """A polygon whose corners lie on one line hides nothing: refused, not kept."""
        twice_area = sum(
            x0 * y1 - x1 * y0
            for (x0, y0), (x1, y1) in zip(points, points[1:] + points[:1], strict=True)
        )
        if abs(twice_area) < 1.0:  # under half a square pixel
            raise ValueError(
                "the points enclose no area; give at least three corners that are not on one "
                "line"
            )
        return points


def unique_region_names(regions: list[IgnoreRegion]) -> list[IgnoreRegion]:
    """Regions named once each: the heatmap and ``profile show`` name them."""
    names = [region.name for region in regions]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ValueError(f"region name {twice[0]!r} is used twice; give each region its own")
    return regions


@register_config_kind("regions")
class RegionsFile(StrictModel):
    """The file ``profile create --ignore-regions`` and ``profile set-regions`` read: the
    ``ignore_regions`` list of ``profile.yaml``, on its own."""

    ignore_regions: list[IgnoreRegion] = Field(min_length=1)

    _unique = field_validator("ignore_regions")(unique_region_names)


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


class FalseAlarmBounds(StrictModel):
    """The false-alarm rate the threshold promises on good parts, from the calibration's
    own good scores (``profiles.fpr_bounds``): at least ``low`` and at most ``high``, each
    with ``confidence``, from ``exceeding`` of ``count`` scores above the threshold."""

    count: int = Field(ge=1)
    exceeding: int = Field(ge=0)
    low: float = Field(ge=0.0, le=1.0)
    high: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(gt=0.0, lt=1.0)
    images_needed: int = Field(ge=1)
    """Good images the target needs before any threshold can promise it."""


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
    good_scores: list[float] | None = None
    """The held-out good scores themselves, sorted: the daemon's drift test compares each
    camera's recent scores with them. None in files calibrated before they were kept (or
    with a pinned threshold); a recalibration from reviews keeps the earlier ones."""
    good_image_stats: dict[str, list[float]] | None = None
    """Cheap statistics of each held-out good image (``padformer_edge.images.image_stats``: its
    luminance percentiles, one list per statistic, in image order): the daemon's drift
    watch compares each camera's recent images with them, which sees a lighting or camera
    change the scores may not. None in files calibrated before they were kept (the image
    test is then off until the profile is calibrated again); a recalibration from reviews
    keeps the earlier ones."""
    scoring: dict[str, Any] | str | None = None
    """How the scores were computed (its method's ``signature``: the metric,
    each job's mix and readout); a line of text in files calibrated by earlier versions,
    None in files calibrated before it was recorded. A threshold only holds for the same
    scoring."""
    rule: Literal["quantile", "upper-bound", "reviews"] = "quantile"
    """How the threshold was set: the good scores' ``1 - target`` quantile plus a
    bootstrap margin, or (``--upper-bound``) the lowest good score whose promised rate's
    upper bound is within the target, or from reviewed inspections (``--from-reviews``).
    A refresh measures on good images again, by the rule of the calibration it replaces
    (``quantile`` after one from reviews)."""
    rate_bounds: FalseAlarmBounds | None = None
    """The rate the threshold promises; None in files calibrated before it was recorded
    and in recalibrations from reviews (reviews are no sample of good parts)."""


    @field_validator("good_image_stats")
    @classmethod
    def _one_value_per_image(
        cls, value: dict[str, list[float]] | None
    ) -> dict[str, list[float]] | None:
        """Every statistic has one value per calibration image: a table whose columns
        differ in length was cut or edited, and the test would read it wrongly."""
        if value is not None and len({len(column) for column in value.values()}) > 1:
            sizes = ", ".join(f"{name} {len(column)}" for name, column in value.items())
            raise ValueError(f"every statistic needs one value per image; found {sizes}")
        return value


class ExportedFiles(StrictModel):
    """The profile's exported graphs and scoring files (``profile export``), pinned by
    content: the line runtime refuses any file whose bytes changed, and an export made
    from another checkpoint than the profile's."""

    folder: str = "exported"
    model_sha256: str = Field(pattern=SHA256_PATTERN)
    files: dict[str, Annotated[str, Field(pattern=SHA256_PATTERN)]] = Field(min_length=1)


class ReviewsUsed(StrictModel):
    """The inspections whose reviews a recalibration read, by verdict (their ids in the
    history database it names)."""

    database: str
    true_defects: list[int]
    false_alarms: list[int]


class ProfileChange(StrictModel):
    """One change to the profile made by a person, kept in the profile itself.

    The file is what changed, and it travels with the profile (copied to another line
    PC, backed up, exported) where a database row would stay behind; ``by`` is the name
    given on the command line (an engineer of the database once it has users)."""

    action: Literal["calibrate-from-reviews", "refresh", "rollback"]
    by: str = Field(min_length=1, max_length=128)
    at: str
    old_threshold: float | None
    new_threshold: float
    reviews: ReviewsUsed | None = None
    """The reviews a recalibration read (``calibrate-from-reviews`` only)."""
    version: int | None = None
    """The version this change made (every change that alters scoring makes one; None in
    recalibrations from reviews written before they did)."""
    from_version: int | None = None
    """The version it replaced; for a rollback, ``restored`` names the one brought back."""
    restored: int | None = None
    candidates_used: list[int] = Field(default_factory=list)
    """Approved candidates (ids) in the refreshed pool, as references or held aside."""
    forced: list[int] = Field(default_factory=list)
    """Candidates scored far above the threshold and taken anyway (``--force``)."""
    newly_passing: list[int] = Field(default_factory=list)
    """Stored inspections (ids) flagged when stored that pass under the new threshold."""
    newly_flagged: list[int] = Field(default_factory=list)
    """Stored inspections (ids) that passed when stored and are flagged under it."""
    accepted_unreviewed: list[int] = Field(default_factory=list)
    """Unreviewed inspections (ids) the old threshold flagged and the new one passes,
    accepted by their count (``--accept-unreviewed N``) instead of reviewed."""


class ReferenceGrowth(StrictModel):
    """How the line offers this profile new references (``profile refresh``)."""

    auto_candidates: bool = False
    """Also offer unreviewed parts scored at or below ``auto_quantile`` of the good
    calibration scores (off by default: only parts an operator reviewed as good)."""
    auto_quantile: float = Field(default=0.1, gt=0.0, le=0.5)
    auto_max_pending: int = Field(default=100, ge=1)
    """The daemon proposes no more while this many candidates wait for a decision."""
    max_references: int = Field(default=12, ge=1)
    """The size limit ``refresh`` selects references up to (a profile that fills it keeps
    its own). CPU time per image grows with the references, and on the validation render
    16 scored no better than 12 after 100 approved views (docs/research.md#growth-limit),
    so 12: a grown profile costs what a 12-reference one does."""


class ApprovedImage(StrictModel):
    """An approved candidate's picture, copied into the profile's ``approved/`` folder."""

    candidate: int
    file: str
    sha256: str = Field(pattern=SHA256_PATTERN)
    held_aside: bool
    """Calibration only, never a reference: chosen by its sha256 (``refresh.held_aside``),
    so it stays aside in every later refresh and the threshold stays honest."""


@register_config_kind("profile")
class ProfileConfig(StrictModel):
    """``profile.yaml``: everything the daemon needs to inspect one product."""

    name: str
    created_at: str
    model: ProfileModelRef | None = None
    """The PADFormer checkpoint, for a metric that scores with one; a ``compare`` profile
    names none (files written before it did keep theirs, still verified where read)."""
    weights: WeightsRef | None = None
    """What a profile without ``model`` scores with: a ``compare`` profile's comparator."""
    detection: DetectionSettings = Field(default_factory=DetectionSettings)
    references: list[ReferenceEntry] = Field(min_length=1)
    selection: ReferenceSelection
    calibration: CalibrationResult | None = None
    background: BackgroundEntry | None = None
    """The empty belt's photo; None: frames are scored whole, as the part filling them."""
    ignore_regions: list[IgnoreRegion] = Field(default_factory=list)
    """Parts of the frame the score ignores (``profile set-regions``); outlined on the
    heatmap."""
    exported: ExportedFiles | None = None
    """Graphs for ``detection.runtime: onnxruntime`` or ``openvino`` (the latter adds their
    IR); None for a profile run with torch."""
    history: list[ProfileChange] = Field(default_factory=list)
    """Changes people made to the profile, oldest first: who, when, what and from what."""
    version: int = Field(default=1, ge=1)
    """Raised by every change that alters scoring once the profile has a threshold
    (``refresh``, ``rollback``, ``calibrate``, ``calibrate --from-reviews``,
    ``set-model``; ``profiles.versions``), the one before kept under ``versions/<n>/``;
    each inspection records the version that scored it."""
    growth: ReferenceGrowth = Field(default_factory=ReferenceGrowth)
    approved: list[ApprovedImage] = Field(default_factory=list)
    """Approved candidates taken in by the last refresh."""

    _unique_regions = field_validator("ignore_regions")(unique_region_names)

    @model_validator(mode="before")
    @classmethod
    def _fill_what_earlier_files_left_out(cls, data: Any) -> Any:
        """The metric's method completes its section of a file written by an earlier
        version (``MethodSettings.from_earlier``), from the signature its calibration
        recorded, so that what a profile scored with stays what it scores with."""
        detection = data.get("detection") if isinstance(data, dict) else None
        if not isinstance(detection, dict):
            return data
        try:
            section = method_for(str(detection.get("metric", PRODUCT_METRIC))).settings_type
        except ValueError:  # an unknown metric: the detection section says so
            return data
        calibration = data.get("calibration")
        recorded = calibration.get("scoring") if isinstance(calibration, dict) else None
        return {**data, "detection": section.from_earlier(detection, recorded)}

    @model_validator(mode="after")
    def _names_what_it_scores_with(self) -> ProfileConfig:
        """A profile is pinned to the weights it scores with: those of its method's own
        that its detection section names (``compare``'s comparator), else the checkpoint.
        A file written before compare profiles named no checkpoint keeps its own."""
        own = self.detection.section.weights_sha256()
        if self.weights is not None and self.weights.sha256 != own:
            raise ValueError(
                f"weights: sha256 {self.weights.sha256[:12]} is not what detection names for "
                f"metric {self.detection.metric} ({own[:12] if own else 'nothing'}); remove "
                "the key or make both name what the profile scores with."
            )
        if self.model is None and self.weights is None:
            what = "its weights (weights: {name, sha256})" if own else "its checkpoint"
            raise ValueError(
                f"model: a profile on metric {self.detection.metric} names {what}; point it "
                "at them with `padformer-edge profile set-model NAME`."
            )
        return self

    @property
    def pinned(self) -> tuple[ProfileModelRef | None, WeightsRef | None]:
        """What the profile is pinned to, as recorded: two versions that differ here ran
        different models."""
        return self.model, self.weights

    @property
    def weights_sha256(self) -> str:
        """The sha256 of the weights the profile is pinned to: its checkpoint, else (a
        compare profile) its comparator; what a calibration, an export and each
        inspection record as ``model_sha256``."""
        if self.model is not None:
            return self.model.sha256
        assert self.weights is not None  # the validator above holds one of the two
        return self.weights.sha256
