"""Does the test-time mask ratio change a model's detection quality? (validation only)

The paper masks 40 % of the query patches per pass at test time, the ratio it trains
with. A model inspecting parts it never saw might do better copying more from its
references and less from the query's own visible context, so this scores one checkpoint
with its own default metric (the product's detection, readouts included) at several mask
ratios on the same 4-shot episodes of a validation render, and prints a table and one JSON
line (--write-docs puts the table in the docs' ``mask-ratio`` block). It is a question
for the validation render: a ratio chosen here would be a detection setting like the
readouts.

    python benchmarks/mask_ratio.py --model padformer_edge/models/generic.safetensors \
        --data data/synth224-s1 --class duck --class lego --max-per-label 30 --write-docs
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.scorers import PADFormerScorer

RATIOS = (0.25, 0.4, 0.55, 0.7)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True)
    parser.add_argument("--data", type=Path, required=True, help="a validation render")
    parser.add_argument("--class", dest="classes", action="append", help="repeatable")
    parser.add_argument("--ratio", type=float, action="append", help=f"default {RATIOS}")
    parser.add_argument("--max-per-label", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model, _ = load_checkpoint(args.model)
    options = EvalOptions(shots=4, seed=0, max_per_label=args.max_per_label)
    episodes = plan_episodes(index_dataset(args.data, categories=args.classes), options)
    images = sum(len(e.tests) for e in episodes)
    figures = {}
    for ratio in args.ratio or RATIOS:
        settings = DetectionSettings(mask_ratio=ratio, device="cpu")
        scored, _ = run_scorer(PADFormerScorer(model, settings=settings), episodes, options)
        figures[ratio] = summarise(scored)["mean"]
    rows = [[f"{r:g}", *(fmt(v[m]) for m in METRICS)] for r, v in figures.items()]
    table = markdown_table(["mask ratio", "image AUROC", "pixel AUROC", "AUPRO"], rows)
    classes = ", ".join(args.classes) if args.classes else "every class"
    summary = (
        f"{args.model.name} with its default metric, {args.data.name} ({classes}; first "
        f"{args.max_per_label} test images of every label, {images} images), 4-shot, random "
        "references (seed 0), 15 passes; mean over classes, in %."
    )
    print(f"{table}\n\n{summary}")
    print_json_line(
        "mask_ratio", {"images": images, "figures": {str(r): v for r, v in figures.items()}}
    )
    if args.write_docs:
        update_docs_section("mask-ratio", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
