"""The detection settings as CLI options, shared by ``detect``, ``profile create`` and
``eval``, and the one function that turns their values into ``DetectionSettings``.

Defaults, limits and the words each option accepts all come from the settings schema,
so an option cannot drift from what a profile file or the detector accepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import typer
from pydantic import ValidationError

from padformer_edge.cli.choices import choice_option
from padformer_edge.detect.scoring_config import scoring_changes
from padformer_edge.detect.settings import (
    MASK_SCHEDULES,
    PRECISIONS,
    PRODUCT_METRIC,
    DetectionSettings,
)
from padformer_edge.devices.runtimes import DEVICES, RUNTIMES
from padformer_edge.errors import UserError
from padformer_edge.methods.registry import METRICS, check_settings

_DEFAULT = DetectionSettings()
OPTION_OF = {"max_batch": "--batch-size"}  # settings field -> option, where they differ

PASSES = typer.Option(_DEFAULT.passes, "--passes", help="Masked reconstruction passes per image.")
MASK_RATIO = typer.Option(_DEFAULT.mask_ratio, "--mask-ratio", help="Share of patches hidden.")
SCHEDULE = choice_option(
    _DEFAULT.schedule, "--schedule", MASK_SCHEDULES, help="Masks drawn at random, or balanced."
)
METRIC = choice_option(
    PRODUCT_METRIC,
    "--metric",
    METRICS,
    help="Error measure; compare is the learned comparison (no passes); auto is fused for "
    "edge models, lab otherwise.",
)
SEED = typer.Option(_DEFAULT.seed, "--seed", help="Seed of the mask schedule.")
DEVICE = choice_option(_DEFAULT.device, "--device", DEVICES, help="Where the model runs.")
PRECISION = choice_option(
    _DEFAULT.precision, "--precision", PRECISIONS, help="fp32, or bf16/fp16 on CUDA."
)
BATCH_SIZE = typer.Option(_DEFAULT.max_batch, "--batch-size", help="Most passes per model call.")
RUNTIME = choice_option(
    _DEFAULT.runtime,
    "--runtime",
    RUNTIMES,
    help="What runs the model: torch, or onnxruntime or openvino on graphs from "
    "padformer-edge export.",
)

SCORING = typer.Option(
    [],
    "--scoring",
    metavar="JOB.KEY=VALUE",
    help="A fused/distance scoring setting over the model's own, e.g. map.sigma=4 or "
    "score.reference_weight=96 (repeat; jobs map and score; keys in the configuration "
    "reference).",
)


FIELD_OF_PARAMETER = {
    "passes": "passes",
    "mask_ratio": "mask_ratio",
    "schedule": "schedule",
    "metric": "metric",
    "seed": "seed",
    "device": "device",
    "precision": "precision",
    "batch_size": "max_batch",
}
"""The command parameters that carry the options above -> the settings field each sets."""

OPTIONAL_FIELD_OF_PARAMETER = {"runtime": "runtime"}
"""Options only some of those commands declare (``detect`` runs exported graphs; a profile
or an evaluation does not yet): the setting keeps its default where a command lacks it."""


def detection_settings(params: Mapping[str, Any]) -> DetectionSettings:
    """Settings from a command's parsed parameters (``ctx.params``): each command declares
    the options above and hands all of its values over at once, so none is forgotten and
    none is renamed on the way. A value the schema refuses is a ``UserError`` naming its
    option and what was given."""
    values = {field: params[name] for name, field in FIELD_OF_PARAMETER.items()}
    values |= {f: params[n] for n, f in OPTIONAL_FIELD_OF_PARAMETER.items() if n in params}
    values["scoring"] = scoring_changes(params.get("scoring") or [])
    try:
        return check_settings(DetectionSettings(**values))
    except ValidationError as err:
        problem = err.errors()[0]
        if not problem["loc"]:  # a rule across options (the runtime's device and precision)
            text = str(problem["ctx"].get("error", problem["msg"])) if "ctx" in problem else ""
            raise UserError(f"{text or problem['msg']}.") from err
        key = str(problem["loc"][0])
        option = OPTION_OF.get(key, "--" + key.replace("_", "-"))
        given = values.get(key)
        raise UserError(
            f"{option}: {problem['msg'].lower()}, but you gave {option} {given}; fix the option."
        ) from err
    except ValueError as err:  # what the metric's method reads (methods.registry)
        raise UserError(f"{err}.") from err
