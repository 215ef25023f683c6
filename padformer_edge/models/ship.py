"""Turn a trained checkpoint into the shipped generic model: float16 file plus model card.

Run once by whoever trains the generic model, on the workstation:

    python -m padformer_edge.models.ship runs/generic/model.safetensors \\
        --wall-time "52 min" --machine "2-core x86_64 CPU, 1 torch thread" \\
        --held-out builtin:duck --held-out builtin:mug

It writes ``generic.safetensors`` (float16 storage, so the wheel stays small) and
``generic.json`` (the card the locator checks) into the package folder, or ``--out``.
Steps and training data come from the checkpoint's own metadata, so the card cannot
disagree with the weights; wall time, machine and the parts kept out of training (the
demo shows one of them) are the trainer's to state.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from padformer_edge.atomic import write_atomic
from padformer_edge.errors import UserError
from padformer_edge.models import CARD_NAME, CHECKPOINT_NAME, package_folder

MAX_BYTES = 25 * 1024 * 1024  # the package must stay installable on a line PC quickly
QUALITY_REFERENCE = "README.md, section 'The shipped model' (benchmarks/quality.py)"


def card_fields(
    metadata: dict[str, Any],
    preset: str,
    wall_time: str,
    machine: str,
    sha256: str,
    size: int,
    held_out: list[str],
) -> dict[str, Any]:
    """The model card: what the model saw, how long it trained, where, and its checksum."""
    return {
        "name": "generic",
        "preset": preset,
        "data": {
            "root": metadata.get("data_root"),
            "layout": metadata.get("data_layout"),
            "train_images": metadata.get("train_images"),
        },
        "held_out": held_out,
        "steps": metadata.get("global_step"),
        "wall_time": wall_time,
        "machine": machine,
        "sha256": sha256,
        "size_bytes": size,
        "storage": "float16",
        "quality": QUALITY_REFERENCE,
    }


def ship(
    checkpoint: Path, out: Path, wall_time: str, machine: str, held_out: list[str] | None = None
) -> Path:
    """Write ``out/generic.safetensors`` (float16) and its card; return the checkpoint path."""
    from padformer_edge.model.checkpoint import file_sha256, load_checkpoint, save_checkpoint

    model, metadata = load_checkpoint(checkpoint)
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
    card = card_fields(metadata, model.preset_name, wall_time, machine, sha, size, held_out or [])
    staging.replace(target)
    write_atomic(out / CARD_NAME, (json.dumps(card, indent=1, sort_keys=True) + "\n").encode())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m padformer_edge.models.ship",
        description="Write the shipped generic model (float16) and its model card.",
    )
    parser.add_argument("checkpoint", type=Path, help="model.safetensors of padformer-edge train")
    parser.add_argument("--wall-time", required=True, help='training wall time, e.g. "52 min"')
    parser.add_argument("--machine", required=True, help="where it trained (CPU/GPU, threads)")
    parser.add_argument(
        "--held-out", action="append", default=[], help="builtin:NAME kept out of training"
    )
    parser.add_argument("--out", type=Path, default=package_folder(), help="default: the package")
    args = parser.parse_args(argv)
    try:
        target = ship(args.checkpoint, args.out, args.wall_time, args.machine, args.held_out)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(f"shipped {target} ({target.stat().st_size / 2**20:.1f} MiB) and {CARD_NAME}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
