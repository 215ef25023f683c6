"""Choose every detection setting on the validation render, never on the test render.

The validation render is the six builtins drawn with another seed (``--seed 1`` of
``padformer-edge synth``): other viewpoints, other defects, the same objects. On it this
benchmark scores, 4-shot with the quality benchmark's protocol:

- the edge model's ``fused`` metric for LAB weights 0 (feature error alone) to 1 (LAB
  alone); the chosen weight is ``padformer_edge.detect.scoring.FUSED_LAB_WEIGHT``;
- PatchCore for each tapped stage set and input size (the bar to beat is its best);
- the LAB reference difference for each smoothing width.

Each method's best configuration (highest mean image AUROC, then AUPRO; marked ``<-``) is
written to ``benchmarks/validation.json``, with every setting's figures;
``benchmarks/quality.py`` reads it for its tuned rows. The baselines need no model, so
they can be validated while the model trains (without ``--checkpoint``); a later run with
``--checkpoint --skip-baselines`` adds the fused sweep and keeps the baselines' results.

    python benchmarks/tune_validation.py --data data/synth224-s1 --write-readme
    python benchmarks/tune_validation.py --data data/synth224-s1 --skip-baselines \
        --checkpoint runs/edge/model.safetensors --write-readme
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_readme_section
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from training.data.layouts import index_dataset
from training.evaluation.fusion import FusionSweepScorer, ReplayScorer
from training.evaluation.patchcore import PatchCoreScorer, parse_config
from training.evaluation.protocol import METRICS, EvalOptions, plan_episodes, run_scorer, summarise
from training.evaluation.refdiff import ReferenceDifferenceScorer
from training.evaluation.report import fmt

CHOICES = Path(__file__).resolve().parent / "validation.json"
FUSED_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
PATCHCORE = ("2@160", "2@224", "2@320", "2+3@160", "2+3@224", "2+3@320", "3@224", "3@320")
REFDIFF_SIGMAS = (1.4, 3.0, 6.0)


def patchcore_scorer(config: str) -> PatchCoreScorer:
    return PatchCoreScorer(*parse_config(config))


def best(rows: dict[str, dict]) -> str:
    """The configuration with the highest mean image AUROC (AUPRO breaks ties)."""
    return max(rows, key=lambda k: (rows[k]["image_auroc"] or 0, rows[k]["aupro"] or 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="The validation render.")
    parser.add_argument("--checkpoint", type=Path, help="An edge checkpoint (fused sweep).")
    parser.add_argument(
        "--skip-baselines", action="store_true", help="Keep the baselines' earlier results."
    )
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        run(args)
    except UserError as err:
        sys.exit(f"error: {err}")


def run(args: argparse.Namespace) -> None:
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    episodes = plan_episodes(index_dataset(args.data), options)
    images = sum(len(e.tests) for e in episodes)
    earlier = json.loads(CHOICES.read_text(encoding="utf-8")) if CHOICES.is_file() else {}
    results: dict[str, dict[str, dict]] = dict(earlier.get("results", {}))

    def evaluate(scorer) -> dict:
        scored, _ = run_scorer(scorer, episodes, options)
        return summarise(scored)["mean"]

    if args.checkpoint:
        model, metadata = load_checkpoint(args.checkpoint)
        if not model.config.cnn_tokens:
            raise UserError(f"{args.checkpoint} is not an edge checkpoint; the sweep needs one.")
        sweep = FusionSweepScorer(model, FUSED_WEIGHTS, seed=args.seed)
        run_scorer(sweep, episodes, options)
        results["edge fused"] = {
            f"lab weight {w}": evaluate(ReplayScorer(sweep.results[w])) for w in FUSED_WEIGHTS
        }
        results["edge fused"]["checkpoint step"] = {"step": metadata.get("global_step")}
    if not args.skip_baselines:
        # settings measured by an earlier run on the same data are kept, not repeated
        done = results if earlier.get("data") == str(args.data) else {}
        patchcore, refdiff = done.get("PatchCore", {}), done.get("refdiff", {})
        results["PatchCore"] = {
            c: patchcore.get(c) or evaluate(patchcore_scorer(c)) for c in PATCHCORE
        }
        results["refdiff"] = {
            f"sigma {s}": refdiff.get(f"sigma {s}") or evaluate(ReferenceDifferenceScorer(s))
            for s in REFDIFF_SIGMAS
        }

    scored_rows = {
        method: {k: v for k, v in rows.items() if "image_auroc" in v}
        for method, rows in results.items()
    }
    chosen = {method: best(rows) for method, rows in scored_rows.items() if rows}
    choices = {"results": results, "data": str(args.data), "images": images}
    if "edge fused" in chosen:
        choices["fused_lab_weight"] = float(chosen["edge fused"].removeprefix("lab weight "))
        choices["edge_checkpoint_step"] = results["edge fused"]["checkpoint step"]["step"]
    if "PatchCore" in chosen:
        choices["patchcore"] = chosen["PatchCore"]
        choices["refdiff_sigma"] = float(chosen["refdiff"].removeprefix("sigma "))
    table_rows = [
        [method, config, *(fmt(v[m]) for m in METRICS), "<-" if chosen[method] == config else ""]
        for method, rows in scored_rows.items()
        for config, v in rows.items()
    ]
    table = markdown_table(
        ["method", "setting", "image AUROC", "pixel AUROC", "AUPRO", ""], table_rows
    )
    summary = (
        f"Validation render {args.data.name}, {args.shots}-shot, random references (seed "
        f"{args.seed}), first {args.max_per_label} test images of every label of every class "
        f"({images} images); mean over classes, in %. Chosen by image AUROC (AUPRO breaks ties)."
    )
    summary += (
        " Rows measured by an earlier run of this command on the same render are kept in "
        "benchmarks/validation.json and not repeated (the baselines need no model, so they "
        "were validated while the model trained)."
    )
    print(table + "\n\n" + summary)
    CHOICES.write_text(json.dumps(choices, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print_json_line("tune_validation", {k: v for k, v in choices.items() if k != "results"})
    if args.write_readme:
        update_readme_section("validation", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
