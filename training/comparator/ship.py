"""Ship a trained comparator: copy its checkpoint into the package and write its card.

    python -m padformer_edge_training.comparator.ship \\
        runs/comparator-fine/step-000400.safetensors \\
        --recipe config/train/comparator-fine.yaml --log runs/comparator-fine.log \\
        --machine "2-core x86_64 CPU, 1 torch thread"

It ships as the default comparator (``weights.COMPARATOR_NAME``); the comparators shipped
before stay beside it (``weights.EARLIER_COMPARATORS``), so profiles made with them keep
their scores. The card (``comparator-320.json``) is what ``weights.locate_comparator``
checks the file against. Steps come from the checkpoint's own metadata, the training
data from the recipe and its render's ``dataset.json`` (objects and the 3D defect kinds
rendered), the families from ``families``, and the wall time from the log of
``padformer-edge train`` (the seconds from its first event to the ``train_step`` event
of the kept step, in either log format), so the card cannot disagree with the weights or
the run; the machine is the trainer's to state.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

from padformer_edge.files.atomic import atomic_path
from padformer_edge.files.digest import file_sha256
from padformer_edge.methods.compare.checkpoint import load_comparator
from padformer_edge.weights import COMPARATOR_NAME, card_path, package_folder
from padformer_edge_training.comparator.recipe import load_recipe
from padformer_edge_training.families import FAMILIES

QUALITY = "docs/research.md#small-defects (research/distance_cells.py)"
# a console line of structlog: ISO time, [level], event, then key=value fields
CONSOLE_LINE = re.compile(r"^(\d{4}-\d\d-\d\dT\S+)\s+\[\s*\w+\s*\]\s+(\w+)(.*)$")
STEP_FIELD = re.compile(r"(?:^|\s)step=(\d+)(?:\s|$)")


def _event(line: str) -> tuple[datetime, str, int | None] | None:
    """(time, event name, step) of one log line in the JSON or console format, else None."""
    if line.startswith("{"):
        try:
            event = json.loads(line)
            stamp = datetime.fromisoformat(event["timestamp"])
        except (ValueError, KeyError, TypeError):
            return None
        step = event.get("step")
        return stamp, str(event.get("event")), step if isinstance(step, int) else None
    found = CONSOLE_LINE.match(line)
    if not found:
        return None
    step = STEP_FIELD.search(found.group(3))
    stamp = datetime.fromisoformat(found.group(1))
    return stamp, found.group(2), int(step.group(1)) if step else None


def wall_seconds(log: Path, step: int) -> float:
    """Seconds from the log's first event to the ``train_step`` event of ``step``."""
    first = last = None
    for line in log.read_text().splitlines():
        event = _event(line.strip())
        if event is None:
            continue
        stamp, name, at = event
        first = first or stamp
        if name == "train_step" and at == step:
            last = stamp
            break
    if first is None or last is None:
        raise SystemExit(f"{log} has no line for step {step}; give the run's log.")
    return (last - first).total_seconds()


def card(
    checkpoint: Path, recipe_path: Path, log: Path, machine: str, name: str = COMPARATOR_NAME
) -> dict[str, Any]:
    """The card of ``checkpoint`` shipped as the file ``name``."""
    model, metadata = load_comparator(checkpoint)
    recipe = load_recipe(recipe_path)
    step = int(metadata["step"])
    dataset = json.loads((recipe.data.root / "dataset.json").read_text())
    return {
        "name": Path(name).stem,
        "config": model.config.to_json(),
        "backbone": model.backbone,
        "data": {
            "root": str(recipe.data.root),
            "recipe": str(recipe_path),
            "objects": len(dataset["classes"]),
            "rendered_defects": dataset["defect_kinds"],
        },
        "families": {word: list(kinds) for word, kinds in FAMILIES.items()},
        "steps": step,
        "wall_time": f"{wall_seconds(log, step) / 60:.1f} min",
        "machine": machine,
        "quality": QUALITY,
        "sha256": file_sha256(checkpoint),
        "size_bytes": checkpoint.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="The comparator checkpoint to ship.")
    parser.add_argument("--recipe", type=Path, required=True, help="The recipe it was trained on.")
    parser.add_argument("--log", type=Path, required=True, help="The run's log.")
    parser.add_argument("--machine", required=True, help="What it was trained on, in words.")
    parser.add_argument("--out", type=Path, default=package_folder())
    parser.add_argument(
        "--name",
        default=COMPARATOR_NAME,
        help="The file it ships as (default: the default comparator's; earlier ones stay).",
    )
    args = parser.parse_args()
    fields = card(args.checkpoint, args.recipe, args.log, args.machine, args.name)
    target = args.out / args.name
    with atomic_path(target) as tmp:
        shutil.copyfile(args.checkpoint, tmp)
    with atomic_path(card_path(target)) as tmp:
        Path(tmp).write_text(json.dumps(fields, indent=1, sort_keys=True) + "\n")
    print(f"shipped {target} ({fields['steps']} steps, sha256 {fields['sha256'][:12]}...)")


if __name__ == "__main__":
    main()
