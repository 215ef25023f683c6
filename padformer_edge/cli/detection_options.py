"""The detection settings as CLI options, declared once and given to ``detect``,
``profile create`` and ``eval`` by ``with_detection_options``, and the one function that
turns their values into ``DetectionSettings``.

Defaults, limits and the words each option accepts all come from the settings schema,
so an option cannot drift from what a profile file or the detector accepts.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import typer
from pydantic import ValidationError

from padformer_edge.cli.choices import choice_option
from padformer_edge.detect.settings import (
    MASK_SCHEDULES,
    PRECISIONS,
    PRODUCT_METRIC,
    DetectionSettings,
)
from padformer_edge.devices.runtimes import DEVICES, RUNTIMES
from padformer_edge.errors import UserError
from padformer_edge.methods.registry import metrics

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
    metrics,
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
    "score.reference_weight=96 (repeat; jobs map and score; keys in the scoring methods' "
    "reference).",
)


OPTIONS: dict[str, tuple[str, type, Any]] = {
    "passes": ("passes", int, PASSES),
    "mask_ratio": ("mask_ratio", float, MASK_RATIO),
    "schedule": ("schedule", str, SCHEDULE),
    "metric": ("metric", str, METRIC),
    "seed": ("seed", int, SEED),
    "device": ("device", str, DEVICE),
    "precision": ("precision", str, PRECISION),
    "batch_size": ("max_batch", int, BATCH_SIZE),
    "runtime": ("runtime", str, RUNTIME),
    "scoring": ("scoring", list[str], SCORING),
}
"""Each option's command parameter -> the settings field it sets, its type and its
declaration: what ``with_detection_options`` adds to a command."""

Command = TypeVar("Command", bound=Callable[..., Any])

FROM_OPTIONS: Any = None
"""The default a command gives its ``settings`` parameter: ``with_detection_options``
puts the options in its place and hands the settings they make."""


def with_detection_options(
    *, without: tuple[str, ...] = (), seed_help: str | None = None
) -> Callable[[Command], Command]:
    """Give a command every detection option (less the parameters ``without`` names: a
    command that runs no exported graph has no ``--runtime``) in place of its ``settings``
    parameter, and call it with the ``DetectionSettings`` they make: the options are
    declared here once, and a command cannot forget one or rename it on the way.
    ``seed_help`` says what else ``--seed`` seeds in that command. The settings are made
    before the command runs, so a bad value is refused before any file is read."""

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command)
        params = list(signature.parameters.values())
        at = [param.name for param in params].index("settings")
        chosen = {name: spec for name, spec in OPTIONS.items() if name not in without}
        added = [
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=_seed_option(seed_help) if name == "seed" and seed_help else option,
                annotation=kind,
            )
            for name, (_, kind, option) in chosen.items()
        ]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            given = {name: kwargs.pop(name) for name in chosen}
            return command(*args, settings=detection_settings(given), **kwargs)

        kept = [param.replace(kind=inspect.Parameter.KEYWORD_ONLY) for param in params]
        run.__signature__ = signature.replace(  # type: ignore[attr-defined]
            parameters=[*kept[:at], *added, *kept[at + 1 :]]
        )
        hints = {k: v for k, v in command.__annotations__.items() if k != "settings"}
        run.__annotations__ = hints | {name: kind for name, (_, kind, _) in chosen.items()}
        return run  # type: ignore[return-value]

    return decorate


def _seed_option(help: str) -> Any:
    return typer.Option(_DEFAULT.seed, "--seed", help=help)


def detection_settings(params: Mapping[str, Any]) -> DetectionSettings:
    """Settings from a command's parsed parameters (``ctx.params``): each command declares
    the options above and hands all of its values over at once, so none is forgotten and
    none is renamed on the way. A value the schema refuses is a ``UserError`` naming its
    option and what was given."""
    values = {OPTIONS[name][0]: value for name, value in params.items() if name in OPTIONS}
    if not values.get("scoring"):  # given, the items are read by the sections that take them
        values.pop("scoring", None)
    try:
        return DetectionSettings(**values)
    except ValidationError as err:
        problem = err.errors()[0]
        if not problem["loc"]:  # a rule across options, or what the metric's method reads
            text = str(problem["ctx"].get("error", problem["msg"])) if "ctx" in problem else ""
            raise UserError(f"{text or problem['msg']}.") from err
        key = str(problem["loc"][0])
        option = OPTION_OF.get(key, "--" + key.replace("_", "-"))
        given = values.get(key)
        raise UserError(
            f"{option}: {problem['msg'].lower()}, but you gave {option} {given}; fix the option."
        ) from err
