"""Choose every detection setting on the validation render, never on the test render.

The validation render is the six builtins drawn with another seed (``--seed 1`` of
``padformer-edge synth``): other viewpoints, other defects, the same objects. On it this
benchmark scores, 4-shot with the quality benchmark's protocol:

- the edge model's ``fused`` metric for LAB weights 0 (feature error alone) to 1 (LAB
  alone), each read out with and without the paper's consistency filter and with four
  smoothing widths, for each checkpoint given (runs of one recipe trained for different
  lengths): the setting with the best image AUROC is the product's image-score job
  (``detect.scoring_config.PRODUCT_SCORING.score``), the one with the best AUPRO its map
  job, and the run with the best image AUROC sets the recipe's training length;
- PatchCore for each tapped stage set, input size and backbone (the bar to beat is its
  best);
- the LAB reference difference for each smoothing width;
- each candidate generic model (``--generic``, runs of the generic recipe) with its
  default metric on the objects it never saw (``--unseen-class``): the best is shipped.

Each method's best configuration (highest mean image AUROC, then AUPRO; marked ``<-``) is
written to ``benchmarks/validation.json``, with every setting's figures; the fused choices
as scoring configurations (``edge_scoring``, ``generic_scoring``: the
``detect.scoring_config.ScoringConfig`` the product and the shipped generic model carry),
and every fused row with its own setting as one job's scoring (``scoring``), so nothing is
ever read back from a row's name;
``benchmarks/quality.py`` reads it for its tuned rows. The baselines need no model, so
they can be validated while the model trains (without ``--checkpoint``); a later run with
``--checkpoint --skip-baselines`` adds the fused sweep and keeps the baselines' results.

    python benchmarks/tune_validation.py --data data/synth224-s1 --write-docs
    python benchmarks/tune_validation.py --data data/synth224-s1 --skip-baselines \
        --checkpoint runs/edge/model.safetensors --checkpoint runs/edge-gpu/model.safetensors \
        --generic runs/generic/model.safetensors --generic runs/generic-gpu/model.safetensors \
        --write-docs

A side sweep that must not move the product's choices (a wider reference-weight grid, to
see where the curve flattens) names its own file with ``--out`` and its grid with
``--reference-weight``; it starts from ``benchmarks/validation.json``'s rows as a full run
does, and leaves that file alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.scoring_config import ScoringConfig
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.refdiff import ReferenceDifferenceScorer
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.sweep import (
    EDGE,
    GENERIC,
    REFERENCE_WEIGHTS,
    best,
    best_map,
    drop_other_samples,
    fused_sweep,
    is_swept_readout,
    row_scoring,
    run_label,
)

CHOICES = Path(__file__).resolve().parent / "validation.json"
PATCHCORE = (
    "2@160", "2@224", "2@320", "2@384", "2@448",
    "2+3@160", "2+3@224", "2+3@320", "2+3@384", "2+3@448",
    "3@224", "3@320",
    "2@320 turned", "2@384 turned", "2@448 turned", "2+3@384 turned", "2+3@448 turned",
    "2@320 turned lite2", "2@448 turned lite2",
)  # fmt: skip
"""Stage sets and input sizes; the five best upright ones also with turned references in
the memory bank, the offer the fused metric's reference term gets (REFERENCE_TURNS); the
two best turned ones also on EfficientNet-Lite2 (the ``lite2`` extra), the backbone the
edge model may take its tokens from too."""
REFDIFF_SIGMAS = (1.4, 3.0, 6.0)


def choose_run_and_weights(runs: dict[str, dict[str, dict]]) -> tuple[str, str, str]:
    """(run, score weight setting, map weight setting). Per run, the score's weight by
    image AUROC and the map's by AUPRO (the image score and the map are separate mixes of
    the same passes, so each metric depends on one weight only); the run by the image
    AUROC it reaches (then the AUPRO)."""
    picks = {m: (best(rows), best_map(rows)) for m, rows in runs.items()}

    def reach(m: str) -> tuple[float, float]:
        score, outline = runs[m][picks[m][0]], runs[m][picks[m][1]]
        return score["image_auroc"] or 0, outline["aupro"] or 0

    run = max(picks, key=reach)
    return run, *picks[run]


def patchcore_scorer(config: str) -> PatchCoreScorer:
    return PatchCoreScorer(*parse_config(config))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="The validation render.")
    parser.add_argument(
        "--checkpoint",
        type=Path,
        action="append",
        default=[],
        help="An edge checkpoint to sweep the fused weight on; repeat to compare runs.",
    )
    parser.add_argument(
        "--generic",
        type=Path,
        action="append",
        default=[],
        help="A generic-model candidate, scored on the --unseen-class objects; repeat.",
    )
    parser.add_argument(
        "--unseen-class",
        action="append",
        default=None,
        help="An object the --generic candidates never saw (default: duck and lego).",
    )
    parser.add_argument(
        "--skip-baselines", action="store_true", help="Keep the baselines' earlier results."
    )
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=5)
    parser.add_argument(
        "--unseen-max-per-label",
        type=int,
        default=15,
        help="Test images per label for the --generic candidates (two objects only, so more "
        "than --max-per-label: 40 images could not tell 20 settings apart).",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(
        "--reference-weight",
        type=float,
        action="append",
        default=None,
        help="A nearest-reference weight of the fused grid; repeat (default: "
        f"{', '.join(f'{w:g}' for w in REFERENCE_WEIGHTS)}).",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=CHOICES,
        help="Where the choices and every row go (default: benchmarks/validation.json, "
        "which quality.py and the product-constant test read).",
    )
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


def run(args: argparse.Namespace) -> None:
    if args.write_docs and args.out.resolve() != CHOICES:
        raise UserError(
            "--write-docs shows the product's choices; a side sweep written to --out "
            "cannot replace them. Drop --write-docs or --out."
        )
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    episodes = plan_episodes(index_dataset(args.data), options)
    images = sum(len(e.tests) for e in episodes)
    weights = tuple(args.reference_weight or REFERENCE_WEIGHTS)
    earlier = json.loads(CHOICES.read_text(encoding="utf-8")) if CHOICES.is_file() else {}
    results: dict[str, dict[str, dict]] = dict(earlier.get("results", {}))

    def evaluate(scorer) -> dict:
        scored, _ = run_scorer(scorer, episodes, options)
        return summarise(scored)["mean"]

    if args.checkpoint:  # the training-length choice compares runs on one sample
        results = drop_other_samples(results, EDGE, images)
    for checkpoint in args.checkpoint:
        model, metadata = load_checkpoint(checkpoint)
        if not model.config.cnn_tokens:
            raise UserError(f"{checkpoint} is not an edge checkpoint; the sweep needs one.")
        rows = fused_sweep(model, episodes, options, args.seed, "", weights)
        results[f"{EDGE} {run_label(metadata)}"] = {
            **rows,
            "checkpoint": {"run": run_label(metadata), "file": checkpoint.name},
        }
    unseen = args.unseen_class or ["duck", "lego"]
    unseen_options = dataclasses.replace(options, max_per_label=args.unseen_max_per_label)
    unseen_episodes = (
        plan_episodes(index_dataset(args.data, categories=unseen), unseen_options)
        if args.generic
        else []
    )
    if args.generic:  # candidates are compared on one set of images: earlier rows go
        results = {m: rows for m, rows in results.items() if not m.startswith(GENERIC)}
    for checkpoint in args.generic:
        model, metadata = load_checkpoint(checkpoint)
        seen = sorted(set(metadata.get("train_images", {})) & set(unseen))
        if seen:
            raise UserError(f"--generic {checkpoint} was trained on {', '.join(seen)}.")
        suffix = f", unseen {'+'.join(unseen)}"
        rows = fused_sweep(model, unseen_episodes, unseen_options, args.seed, suffix, weights)
        results[f"{GENERIC} {run_label(metadata)}"] = {
            **rows,
            "checkpoint": {"run": run_label(metadata), "file": checkpoint.name},
        }
    if not args.skip_baselines:
        # settings measured by an earlier run on the same data are kept, not repeated
        same_data = earlier.get("data") == str(args.data)
        done = drop_other_samples(results, "", images) if same_data else {}
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
    marks: dict[tuple[str, str], str] = {}  # (method, setting) -> why it is marked
    choices = {"results": results, "data": str(args.data), "images": images}
    for method in ("PatchCore", "refdiff"):
        if scored_rows.get(method):
            marks[(method, best(scored_rows[method]))] = "<-"
    if "PatchCore" in scored_rows:
        choices["patchcore"] = best(scored_rows["PatchCore"])
        choices["refdiff_sigma"] = float(best(scored_rows["refdiff"]).removeprefix("sigma "))
    # The edge runs are scored on the six seen objects, the generic candidates on the two
    # they never saw; each family gets its own run and scoring (the product's is
    # PRODUCT_SCORING, the generic model's is shipped in its header by models/ship.py).
    for prefix, family in ((EDGE, "edge"), (GENERIC, "generic")):
        runs = {m: rows for m, rows in scored_rows.items() if m.startswith(prefix) and rows}
        if not runs:
            continue
        run, score_setting, map_setting = choose_run_and_weights(runs)
        marks[(run, score_setting)] = "<- score"
        marks[(run, map_setting)] = "<- map" if map_setting != score_setting else "<- both"
        choices[f"{family}_run"] = run.removeprefix(prefix).strip()
        chosen = ScoringConfig(
            map=row_scoring(run, map_setting, runs[run][map_setting]),
            score=row_scoring(run, score_setting, runs[run][score_setting]),
        )
        choices[f"{family}_scoring"] = chosen.canonical()
    table_rows = [  # the fused sweeps' other readouts stay in validation.json
        [method, config, *(fmt(v[m]) for m in METRICS), marks.get((method, config), "")]
        for method, rows in scored_rows.items()
        for config, v in rows.items()
        if (method, config) in marks or not is_swept_readout(method, config, v)
    ]
    table = markdown_table(
        ["method", "setting", "image AUROC", "pixel AUROC", "AUPRO", ""], table_rows
    )
    summary = (
        f"Validation render {args.data.name}, {args.shots}-shot, random references (seed "
        f"{args.seed}), first {args.max_per_label} test images of every label of every class "
        f"({images} images); mean over classes, in %. Chosen by image AUROC (AUPRO breaks ties), "
        "except the fused map's weight (`<- map`), chosen by AUPRO (pixel AUROC breaks ties). "
        f"The generic candidates' rows score the first {args.unseen_max_per_label} test "
        "images of every label of the objects they never saw."
    )
    summary += (
        " Fused rows are shown read out the paper's way (consistency filter, no smoothing) "
        "and where chosen; every other readout's row is in benchmarks/validation.json."
        " Rows measured by an earlier run of this command on the same render and number "
        "of images are kept in benchmarks/validation.json and not repeated (the baselines "
        "need no model, so they were validated while the model trained)."
    )
    print(table + "\n\n" + summary)
    args.out.write_text(json.dumps(choices, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print_json_line("tune_validation", {k: v for k, v in choices.items() if k != "results"})
    if args.write_docs:
        update_docs_section("validation", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
