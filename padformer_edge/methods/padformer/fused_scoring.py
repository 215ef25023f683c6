"""How the ``fused`` score is set: one typed object, declared and validated here only.

The fused metric reads its passes twice, once for the anomaly map and once for the map
whose maximum is the image score (outlining a defect and ranking whole images want
different things), so ``ScoringConfig`` holds one ``JobScoring`` per job. Its values come
in layers, each setting only what it changes (a field left out, or null, is taken from
the layer below):

1. the product's (``PRODUCT_SCORING``, chosen on the validation render by the validation
   sweep for the best AUPRO and image AUROC; docs/research.md names the commit with its
   script);
2. the model's own, stored in its checkpoint's header (a model that inspects objects it
   never saw, such as the shipped generic one, can want another mix than one trained on
   its test objects, so the choice travels with the weights);
3. a profile's ``detection.scoring`` section;
4. the command line (``--scoring map.sigma=4``).

``resolve_scoring`` stacks them and checks that every value is set. The scoring signature a
profile's threshold is recorded with (``detect.signature``) is built from the same values.

This module imports no torch, so the CLI and the config schemas can declare it for free;
it sits in the fused method's package, whose section (``fused_settings``) holds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml
from pydantic import ConfigDict, Field, ValidationError

from padformer_edge.config import StrictModel
from padformer_edge.detect.readout_constants import MAX_READOUT_SIGMA
from padformer_edge.errors import UserError

MAX_REFERENCE_WEIGHT = 400.0
"""Upper bound of the nearest-reference term's weight in a ``fused`` mix: twice the
largest weight the validation sweep offers."""
MAX_REFERENCE_ZOOM = 3
"""Largest magnification the nearest-reference distance is averaged over: at 3x a 224 px
model reads 672 px images, about nine times the CNN's work of 1x."""
JOBS = ("map", "score")


class JobScoring(StrictModel):
    """One job of the fused score: what it adds up per pass, and how it reads the passes.

    Null (or left out) takes the value of the layer below (the product's, the model's own,
    a profile's, the command line's: see the module's docstring).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    lab_weight: float | None = Field(
        None,
        ge=0.0,
        le=1.0,
        description="share of the LAB colour error in the reconstruction error (the "
        "predicted-feature error takes the rest), each divided by its spread on good views",
    )
    reference_weight: float | None = Field(
        None,
        ge=0.0,
        le=MAX_REFERENCE_WEIGHT,
        description="weight of the nearest-reference distance (one minus the best cosine of "
        "each query cell to any reference cell) added to every pass; 0: no reference term",
    )
    reference_zoom: int | None = Field(
        None,
        ge=1,
        le=MAX_REFERENCE_ZOOM,
        description="the reference distance is the mean over the images magnified 1x..zoom x",
    )
    reference_turns: bool | None = Field(
        None,
        description="also match each reference turned by a quarter, a half and three quarters",
    )
    consistency_filter: bool | None = Field(
        None,
        description="keep the pass mean only where the variance over passes is above its "
        "median (the paper); false: the plain pass mean",
    )
    sigma: float | None = Field(
        None,
        ge=0.0,
        le=MAX_READOUT_SIGMA,
        description="Gaussian smoothing of the map, in pixels of the model's input (0: none)",
    )

    def over(self, below: JobScoring) -> JobScoring:
        """This job's set values, the rest from ``below``."""
        return below.model_copy(update=self.model_dump(exclude_none=True))

    @property
    def is_complete(self) -> bool:
        return all(value is not None for value in self.model_dump().values())


class ScoringConfig(StrictModel):
    """The fused score's settings: one section for the anomaly map, one for the map whose
    maximum is the image score. Every key is optional; what is left out comes from the
    model's own settings, else the product's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    map: JobScoring = Field(
        default_factory=JobScoring, description="the anomaly map's mix and readout"
    )
    score: JobScoring = Field(
        default_factory=JobScoring,
        description="the mix and readout of the map whose maximum is the image score",
    )

    def over(self, below: ScoringConfig) -> ScoringConfig:
        """The values set here, the rest from ``below``."""
        return ScoringConfig(map=self.map.over(below.map), score=self.score.over(below.score))

    def changes(self) -> dict[str, dict[str, Any]]:
        """Only the values set here (JSON-ready): what a layer stores, a header for one."""
        dumped = self.model_dump(mode="json", exclude_none=True)
        return {job: values for job, values in dumped.items() if values}

    def canonical(self) -> dict[str, dict[str, Any]]:
        """Every value, null included, as JSON-ready nested dicts: the form that is written
        to files and compared structurally."""
        return self.model_dump(mode="json")

    @property
    def is_complete(self) -> bool:
        return self.map.is_complete and self.score.is_complete


PRODUCT_SCORING = ScoringConfig(
    map=JobScoring(
        lab_weight=0.25,
        reference_weight=12.0,
        reference_zoom=2,
        reference_turns=True,
        consistency_filter=False,
        sigma=2.0,
    ),
    score=JobScoring(
        lab_weight=0.0,
        reference_weight=192.0,
        reference_zoom=2,
        reference_turns=True,
        consistency_filter=True,
        sigma=0.0,
    ),
)
"""The product's fused score, chosen on the validation render (seed 1) by the validation
sweep, never on the test render (``benchmarks/validation.json`` holds it as
``edge_scoring``, and a test keeps the two equal; the sweep's script left the tree, and
docs/research.md names the commit that has it).

The map adds a quarter of colour to the feature error and a light nearest-reference term,
and reads the plain pass mean, smoothed: the paper's consistency filter zeroes at least
half of every map, defect pixels with a low variance over passes among them. The score
leaves colour out and is carried by the nearest-reference distance: a whole-image verdict
gains most from asking whether anything like each cell was seen in a reference. Both read
that distance on 1x and 2x inputs (the finer cells of the 2x input see small defects that a
stride-8 cell of the model's own input averages away) and match turned references (a part
seen from any side is seen at any roll). The score keeps the filter, unsmoothed, which on
360 validation images ranked images a little better than the smoothed mean, the two within
a point."""


def resolve_scoring(*layers: ScoringConfig | None) -> ScoringConfig:
    """The complete settings of ``layers``, lowest first (None: a layer that sets nothing),
    over the product's."""
    resolved = PRODUCT_SCORING
    for layer in layers:
        if layer is not None:
            resolved = layer.over(resolved)
    assert resolved.is_complete  # the product's layer sets every value
    return resolved


def scoring_from_json(data: Mapping[str, Any] | None, source: str) -> ScoringConfig:
    """``data`` (a header's or a file's nested dict; None: nothing set) as a ScoringConfig,
    or a UserError naming ``source`` and the first bad key."""
    try:
        return ScoringConfig.model_validate(dict(data or {}))
    except ValidationError as err:
        raise UserError(f"{source}: {_problem(err)}.") from None


def scoring_changes(items: Iterable[str], option: str = "--scoring") -> ScoringConfig:
    """'JOB.KEY=VALUE' items (VALUE read as YAML: 4, 0.25, true) as one ScoringConfig layer;
    a malformed item, an unknown key or a bad value is a UserError naming it."""
    nested: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        job, dot, name = key.strip().partition(".")
        if not sep or not dot or not name:
            raise UserError(
                f"{option} {item!r} is not JOB.KEY=VALUE; write e.g. {option} map.sigma=4."
            )
        if job not in JOBS:
            raise UserError(
                f"{option} {item!r} names job '{job}'; the jobs are {' and '.join(JOBS)}."
            )
        if name not in JobScoring.model_fields:
            raise UserError(
                f"{option} {item!r}: '{name}' is not a scoring key; choose one of "
                f"{', '.join(JobScoring.model_fields)}."
            )
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            value = text
        nested.setdefault(job, {})[name] = value
    try:
        return ScoringConfig.model_validate(nested)
    except ValidationError as err:
        raise UserError(f"{option} {_problem(err)}; fix the option.") from None


def _problem(err: ValidationError) -> str:
    """The first problem of a validation error, as 'map.sigma: input should be ...'."""
    problem = err.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    given = f" (given {problem['input']!r})" if "input" in problem else ""
    return f"{where}: {problem['msg'].lower()}{given}"
