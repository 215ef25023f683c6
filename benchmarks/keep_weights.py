"""Keep a GPU run's weights in the repository: a float16 copy, and what the rounding cost.

Writes each file's checked float16 copy (``padformer_edge_training.release.keep_weights``) into
``--out`` (``benchmarks/models/``, the one folder of weights that docs tables name) and
the table of how far the rounding moved each file's weights.

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
from padformer_edge_training.release.keep_weights import keep


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
