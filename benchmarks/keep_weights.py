"""Keep a GPU run's weights in the repository: a float16 copy, and what the rounding cost.

A lent GPU machine is bare each time and a workstation can be replaced, so the
weights a docs table was measured on are kept in ``benchmarks/models/`` (the first edge
model was lost because they were not). Float16 halves the file; this says, per file, how
far the rounding moved the weights (the largest change of any tensor relative to that
tensor's largest value) and checks that the copy loads with the same config and metadata.

    python benchmarks/keep_weights.py runs/gpu/edge-gpu.safetensors \\
        --out benchmarks/models --write-docs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    markdown_table,
    parse_and_run,
    print_json_line,
    update_docs_section,
)
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint


def largest_relative_change(before: dict, after: dict) -> tuple[float, str]:
    """(largest |after - before| / max |before| over floating tensors, its tensor's name)."""
    worst, name = 0.0, ""
    for key, tensor in before.items():
        if not tensor.is_floating_point() or not tensor.numel():
            continue
        scale = float(tensor.abs().max())
        change = float((after[key].float() - tensor.float()).abs().max())
        relative = change / scale if scale > 0 else change
        if relative > worst:
            worst, name = relative, key
    return worst, name


def keep(source: Path, out_dir: Path) -> dict:
    """Write the float16 copy of ``source`` into ``out_dir`` and check it."""
    target = out_dir / source.name
    if target.resolve() == source.resolve():
        raise UserError(f"{source} is already in {out_dir}; give the GPU's original file.")
    model, metadata = load_checkpoint(source)
    save_checkpoint(target, model, metadata, half=True)
    copy, copy_metadata = load_checkpoint(target)
    if copy.config != model.config or copy_metadata != metadata:
        raise UserError(f"{target} does not read back with {source}'s config and metadata.")
    change, tensor = largest_relative_change(model.state_dict(), copy.state_dict())
    return {
        "file": str(target),
        "step": metadata.get("global_step"),
        "bytes_before": source.stat().st_size,
        "bytes_after": target.stat().st_size,
        "largest_relative_change": change,
        "tensor": tensor,
    }


def run(args: argparse.Namespace) -> None:
    args.out.mkdir(parents=True, exist_ok=True)
    kept = [keep(source, args.out) for source in args.checkpoint]
    table = markdown_table(
        ["kept file", "step", "MB before", "MB after", "largest relative change", "in tensor"],
        [
            [
                k["file"],
                k["step"],
                round(k["bytes_before"] / 1e6, 1),
                round(k["bytes_after"] / 1e6, 1),
                f"{k['largest_relative_change']:.1e}",
                f"`{k['tensor']}`",
            ]
            for k in kept
        ],
    )
    print(table)
    print_json_line("keep_weights", {"kept": kept})
    if args.write_docs:
        update_docs_section(args.section, table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=Path, nargs="+", help="The GPU's float32 files.")
    parser.add_argument("--out", type=Path, required=True, help="Folder for the copies.")
    parser.add_argument("--section", default="kept-weights", help="docs block to fill.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
