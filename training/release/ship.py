"""Turn a trained checkpoint into the shipped generic model: float16 file plus model card.

Run once by whoever trains the generic model, on the workstation:

    python -m padformer_edge_training.release.ship runs/generic/model.safetensors \\
        --wall-time "52 min" --machine "2-core x86_64 CPU, 1 torch thread" \\
        --held-out builtin:duck --held-out builtin:mug

It writes ``generic.safetensors`` (float16 storage, so the wheel stays small) and
``generic.json`` (the card the locator checks) into the package folder, or ``--out``.
Steps and training data come from the checkpoint's own metadata, so the card cannot
disagree with the weights; wall time, machine and the parts kept out of training (the
demo shows one of them) are the trainer's to state. A run continued from other weights
(``train --init``) records them (path and sha256) in its metadata, and the card keeps
that record; the steps behind those weights are stated with ``--earlier-steps`` and
added to the card's ``steps`` (``steps_this_run`` keeps the run's own count).
``--validation benchmarks/validation.json`` stores the fused metric's settings chosen for
this model on validation objects it never saw (the validation sweep,
``tune_validation.py --generic`` as commit 535e14d holds it, wrote them as
``generic_scoring``, a ``ScoringConfig``: the LAB weight, nearest-reference weight and
readout of its map and of its image score) in the shipped file's header, where the
detector reads them, and on the card.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.methods.padformer.fused_scoring import ScoringConfig, scoring_from_json
from padformer_edge.weights import CARD_NAME, CHECKPOINT_NAME, package_folder

MAX_BYTES = 25 * 1024 * 1024  # the package must stay installable on a line PC quickly
QUALITY_REFERENCE = (
    "docs/benchmarks.md, tables quality-unseen and quality-renders "
    "(benchmarks/quality.py, benchmarks/render_spread.py)"
)
CARD_KEYS = {
    "weight": "lab_weight",
    "reference_weight": "reference_weight",
    "reference_zoom": "reference_zoom",
    "reference_turns": "reference_turns",
    "filter": "consistency_filter",
    "sigma": "sigma",
}
"""The card's name -> the ``ScoringConfig`` key, for each job of the card's ``fused``
section (the card keeps the names earlier cards used)."""


def card_fields(
    metadata: dict[str, Any],
    preset: str,
    wall_time: str,
    machine: str,
    sha256: str,
    size: int,
    held_out: list[str],
    earlier_steps: int = 0,
    fused: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The model card: what the model saw, how long it trained, where, and its checksum
    (and the fused-metric settings the model carries, if it carries its own).
    ``check_lineage`` has vouched for ``earlier_steps``."""
    steps = metadata.get("global_step")
    return {
        "name": "generic",
        "preset": preset,
        "data": {
            "root": metadata.get("data_root"),
            "layout": metadata.get("data_layout"),
            "train_images": metadata.get("train_images"),
        },
        "held_out": held_out,
        "steps": (steps or 0) + earlier_steps,
        "steps_this_run": steps,
        "continued_from": metadata.get("init"),
        "fused": fused,
        "wall_time": wall_time,
        "machine": machine,
        "sha256": sha256,
        "size_bytes": size,
        "storage": "float16",
        "quality": QUALITY_REFERENCE,
    }


def check_lineage(metadata: dict[str, Any], earlier_steps: int) -> None:
    """A continued run (its metadata records ``init``) must state the steps behind its
    starting weights, and only a continued run may."""
    init = metadata.get("init")
    if earlier_steps and not init:
        raise UserError(
            "--earlier-steps is for a run continued from other weights (train --init), "
            "and this checkpoint records none; leave it out."
        )
    if init and not earlier_steps:
        raise UserError(
            f"the checkpoint was fine-tuned from {init['path']}; give the steps behind those "
            "weights with --earlier-steps so that the card states the whole training."
        )


def ship(
    checkpoint: Path,
    out: Path,
    wall_time: str,
    machine: str,
    held_out: list[str] | None = None,
    earlier_steps: int = 0,
    scoring: ScoringConfig | None = None,
) -> Path:
    """Write ``out/generic.safetensors`` (float16) and its card; return the checkpoint path.
    ``scoring`` (complete) becomes the model's own fused-metric settings."""
    from padformer_edge.model.checkpoint import file_sha256, load_checkpoint, save_checkpoint

    model, metadata = load_checkpoint(checkpoint)
    if scoring is not None:
        if not model.config.cnn_tokens:
            raise UserError(f"{checkpoint} has no CNN tokens, so no fused metric to set.")
        model.scoring = scoring.changes()
    check_lineage(metadata, earlier_steps)  # before anything is written
    target = out / CHECKPOINT_NAME
    staging = out / f".{CHECKPOINT_NAME}.tmp"
    out.mkdir(parents=True, exist_ok=True)
    save_checkpoint(staging, model, {**metadata, "shipped_from": file_sha256(checkpoint)}, True)
    size = staging.stat().st_size
    if size > MAX_BYTES:
        staging.unlink()
        raise UserError(
            f"{checkpoint} stored as float16 is {size / 2**20:.1f} MiB, over the "
            f"{MAX_BYTES // 2**20} MiB a shipped model may take; use a smaller preset."
        )
    sha = file_sha256(staging)
    card = card_fields(
        metadata,
        model.preset_name,
        wall_time,
        machine,
        sha,
        size,
        held_out or [],
        earlier_steps,
        fused_card(scoring) if scoring is not None else None,
    )
    staging.replace(target)
    write_atomic(out / CARD_NAME, (json.dumps(card, indent=1, sort_keys=True) + "\n").encode())
    return target


def fused_card(scoring: ScoringConfig) -> dict[str, dict[str, Any]]:
    """{'map': {...}, 'score': {...}}: each job's weights, filter and smoothing, as carried."""
    jobs = scoring.canonical()
    return {
        job: {card: jobs[job][key] for card, key in CARD_KEYS.items()} for job in ("map", "score")
    }


def fused_from_validation(path: Path) -> ScoringConfig:
    """The generic model's fused settings that the validation sweep chose
    (``generic_scoring``), read from its validation.json."""
    try:
        choices = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UserError(f"--validation {path} cannot be read as JSON: {err}") from None
    if "generic_scoring" not in choices:
        raise UserError(
            f"--validation {path} has no generic_scoring; pass benchmarks/validation.json, "
            "which holds the validation sweep's choices."
        )
    scoring = scoring_from_json(choices["generic_scoring"], f"--validation {path}")
    if not scoring.is_complete:
        missing = [
            f"{job}.{key}"
            for job, values in scoring.canonical().items()
            for key, value in values.items()
            if value is None
        ]
        raise UserError(
            f"--validation {path}: generic_scoring sets no {missing[0]}; pass "
            "benchmarks/validation.json, which holds the validation sweep's choices."
        )
    return scoring


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m padformer_edge_training.release.ship",
        description="Write the shipped generic model (float16) and its model card.",
    )
    parser.add_argument("checkpoint", type=Path, help="model.safetensors of padformer-edge train")
    parser.add_argument("--wall-time", required=True, help='training wall time, e.g. "52 min"')
    parser.add_argument("--machine", required=True, help="where it trained (CPU/GPU, threads)")
    parser.add_argument(
        "--held-out", action="append", default=[], help="builtin:NAME kept out of training"
    )
    parser.add_argument(
        "--earlier-steps",
        type=int,
        default=0,
        help="steps behind the weights a continued run started from (train --init)",
    )
    parser.add_argument(
        "--validation", type=Path, help="validation.json with the generic model's fused choice"
    )
    parser.add_argument("--out", type=Path, default=package_folder(), help="default: the package")
    args = parser.parse_args(argv)
    try:
        target = ship(
            args.checkpoint,
            args.out,
            args.wall_time,
            args.machine,
            args.held_out,
            args.earlier_steps,
            None if args.validation is None else fused_from_validation(args.validation),
        )
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"shipped {target} ({target.stat().st_size / 2**20:.1f} MiB) and {CARD_NAME}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
