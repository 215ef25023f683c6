"""Does the reference pointer's mix or its choice limit its reconstruction? (validation)

A pointer model (``feature_readout: references``) predicts each hidden patch as a softmax
mix of the reference patches it points at. This scores one such checkpoint on a
validation render with the reconstruction alone, read three ways: the mix (the design);
for each ``--candidates K`` the nearest cell among the pointer's K highest-scoring
reference patches (``training/evaluation/pointer_candidates.py``); and, for reference,
the nearest-reference distance alone with the model's own setting and with upright
references only (what every reference patch as a candidate reduces to). If restricting
the distance to where the pointer looks ranks images worse than the unrestricted
distance, the pointer's choice, not its mix, is what a longer training must improve.

Prints a table and one JSON line; ``--write-docs`` fills the docs' ``pointer-candidates``
block.

    python benchmarks/pointer_candidates.py --model runs/generic-pointer-2/model.safetensors \
        --data data/synth224-s1 --class duck --class lego --max-per-label 6 --write-docs
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    add_episode_arguments,
    markdown_table,
    parse_and_run,
    print_json_line,
    update_docs_section,
)
from padformer_edge.detect.scoring_config import ScoringConfig
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.pointer_candidates import CandidateReadout
from padformer_edge_training.evaluation.protocol import (
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from padformer_edge_training.evaluation.simple_rows import reconstruction_only

METRICS = ("image_auroc", "pixel_auroc", "aupro")
UPRIGHT = ScoringConfig.model_validate(
    {job: {"reference_turns": False} for job in ("map", "score")}
)


def rows(model, candidates: list[int], mask_ratio: float) -> list[tuple[str, PADFormerScorer]]:
    """(label, scorer) in table order."""
    alone = reconstruction_only(model)
    base = DetectionSettings(seed=0, device="cpu", mask_ratio=mask_ratio)

    def scorer(label: str, net, **options) -> tuple[str, PADFormerScorer]:
        return label, PADFormerScorer(net, label, base.replace(**options))

    return [
        scorer("reconstruction alone: the pointer's mix", alone),
        *(
            scorer(
                f"reconstruction alone: nearest of the pointer's {k} reference patch"
                f"{'es' if k > 1 else ''}",
                CandidateReadout.of(alone, k),
            )
            for k in candidates
        ),
        scorer("distance alone (the model's setting)", model, metric="distance"),
        scorer(
            "distance alone, upright references only", model, metric="distance", scoring=UPRIGHT
        ),
    ]


def run(args: argparse.Namespace) -> None:
    model, metadata = load_checkpoint(args.model)
    CandidateReadout.of(model, 1)  # refuses a model with no pointer, in one sentence
    candidates = args.candidates or [1, 4, 16, 64]
    pool = args.shots * model.config.num_patches
    wrong = [k for k in candidates if not 1 <= k <= pool]
    if wrong:
        sys.exit(f"error: --candidates must be between 1 and {pool} ({args.shots} references).")
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    index = index_dataset(args.data, categories=args.class_ or None)
    episodes = plan_episodes(index, options)
    results = {}
    for label, scorer in rows(model, candidates, args.mask_ratio):
        scored, cpu = run_scorer(scorer, episodes, options)
        mean = summarise(scored, per_defect=False)["mean"]
        results[label] = {**{m: mean[m] for m in METRICS}, "cpu_s_per_image": round(cpu, 4)}
        print(f"{label}: {results[label]}", file=sys.stderr, flush=True)
    images = sum(len(e.tests) for e in episodes)
    table = markdown_table(
        ["reading", "image AUROC", "pixel AUROC", "AUPRO", "CPU s / image"],
        [
            [label, *(fmt(r[m]) for m in METRICS), f"{r['cpu_s_per_image']:.3f}"]
            for label, r in results.items()
        ],
    )
    classes = ", ".join(sorted({e.category for e in episodes}))
    body = (
        f"{args.model.parent.name}/{args.model.name} (step {metadata.get('global_step')}), "
        f"{images} images of {classes} in {args.data.name}, {args.shots}-shot; reconstruction "
        f"rows read 15 passes hiding {args.mask_ratio:g} of the patches each.\n\n{table}"
    )
    print(body)
    print_json_line("pointer_candidates", {"checkpoint": str(args.model), "rows": results})
    if args.write_docs:
        update_docs_section(args.section, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="a pointer checkpoint")
    parser.add_argument("--data", type=Path, required=True, help="a validation render")
    parser.add_argument(
        "--candidates",
        type=int,
        action="append",
        help="reference patches the pointer may propose (repeat; default 1, 4, 16, 64)",
    )
    parser.add_argument("--mask-ratio", type=float, default=0.4)
    add_episode_arguments(parser, "pointer-candidates", max_per_label=6)
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
