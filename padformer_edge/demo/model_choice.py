"""Which model the demo inspects with, which part it shows, and how to say so.

The demo's point is the product's promise: a part the model never saw, inspected from a
few reference photos. So it prefers a part the model card lists as held out of training,
and says plainly when it cannot tell.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from padformer_edge.demo.plan import DemoPlan
from padformer_edge.errors import UserError
from padformer_edge.weights import generic_checkpoint_path, locate_generic_model, read_card


@dataclass(frozen=True)
class DemoModel:
    checkpoint: Path
    card: dict[str, Any] | None  # the shipped model's card; None for a --model file
    plan: DemoPlan  # the plan with the part to show
    note: str  # one clause for the rendering line, e.g. "(held out of ...)"


def no_shipped_model() -> UserError:
    return UserError(
        "no generic model is shipped in this install; run `padformer-edge demo --train` to "
        "train a small model first (about 10 minutes), or pass --model PATH."
    )


def choose(plan: DemoPlan, model: Path | None) -> DemoModel:
    """The demo's model (``--model`` or the shipped one) and the part it should inspect."""
    if model is not None:
        if not model.is_file():
            raise UserError(f"--model {model}: no such checkpoint; give a .safetensors file.")
        return DemoModel(model, None, plan, "")
    if not generic_checkpoint_path().is_file():
        raise no_shipped_model()
    checkpoint = locate_generic_model()
    card = read_card(checkpoint)
    held_out = [m for m in card.get("held_out", []) if isinstance(m, str)]
    if held_out:
        mesh = plan.mesh if plan.mesh in held_out else held_out[0]
        note = "(a part the generic model never trained on) "
        return DemoModel(checkpoint, card, replace(plan, mesh=mesh), note)
    note = "(the model card does not list held-out parts) "
    return DemoModel(checkpoint, card, plan, note)


def describe(choice: DemoModel) -> str:
    """One sentence on the model for the demo's closing lines."""
    if choice.card is None:
        return f"the checkpoint {choice.checkpoint}, given with --model"
    card = choice.card
    return (
        f"the shipped generic model ({card.get('preset', '?')} preset, {card['steps']} "
        f"training steps, {card['wall_time']} on {card['machine']}, sha256 "
        f"{str(card['sha256'])[:12]}...)"
    )


def describe_scoring(choice: DemoModel, metric: str) -> str:
    """What the demo's profile scores with, for the closing lines: the model (``describe``)
    for a metric that reads it, else the method's own shipped weights (``compare``'s
    comparator), since such a profile never reads the generic model."""
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.methods.registry import method_for

    method = method_for(metric)
    settings = method.settled(DetectionSettings(metric=metric))
    own = settings.section.weights_sha256()
    if method.reads_padformer or own is None:
        return describe(choice)
    return (
        f"the {metric} score's shipped weights {method.weights_name(settings)} (sha256 "
        f"{own[:12]}...); a {metric} profile reads no PADFormer checkpoint"
    )
