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
from typing import TypeVar

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.paper_metrics import PAPER_READOUT, Readout
from padformer_edge.detect.scoring_config import JobScoring, ScoringConfig
from padformer_edge.detect.signature import TURNS_TEXT
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from training.data.layouts import index_dataset
from training.evaluation.fusion import FusedSetting, FusionSweepScorer, ReplayScorer
from training.evaluation.patchcore import PatchCoreScorer, parse_config
from training.evaluation.protocol import METRICS, EvalOptions, plan_episodes, run_scorer, summarise
from training.evaluation.refdiff import ReferenceDifferenceScorer
from training.evaluation.report import fmt

CHOICES = Path(__file__).resolve().parent / "validation.json"
FUSED_WEIGHTS = (0.0, 0.25)
"""LAB weights of a fused mix. 0.5, 0.75 and 1 were swept too until the nearest-reference
zoom joined the grid; they never won a job for either model, and dropping them keeps the
grown sweep within a CPU half hour."""
READOUTS = (Readout(True, 0.0), *(Readout(False, sigma) for sigma in (2.0, 4.0)))
"""The paper's filtered map, and the plain pass mean smoothed by a Gaussian of 2 or 4
model pixels (PatchCore smooths with 4): how much of a map's noise to average away
before its maximum or its outline is read is a property of the model's errors, so it is
chosen here, not assumed. The unsmoothed mean, sigma 8 and the filtered map smoothed
were swept too until the reference zoom joined the grid, and never won a job."""
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
REFERENCE_WEIGHTS = (0.0, 12.0, 24.0, 48.0, 96.0, 192.0)
"""Weights of the nearest-reference distance (one minus a cosine, so about 0.1 on good
cells) in a fused mix whose other terms are in units of their spread on good views:
0 leaves the references to the reconstruction alone, 192 lets them dominate (the grid
ended at 48 until the generic model chose 48, and at 96 until it chose 96; 6 was in it
until no job chose it). 384 and 768 were scored in a side sweep (``--reference-weight``,
benchmarks/sweeps/sweep-weights-*.json, docs block ``reference-weight-curve``): both models'
image AUROC was flat past 192, so the grid stops there. Eight weights on 360 images do
not fit this machine's 24 GiB (every setting keeps its maps for the replay)."""
REFERENCE_ZOOMS = (1, 2)
"""The reference distance at the model's size, or averaged with the images magnified 2x.
Measured on this render before the sweep, the distance alone at 2x ranked the six
objects' images better than at 1x, and duck and lego's worse; 3x cost four times 2x's
CPU and was worse still on both, so it is not swept."""
REFERENCE_TURNS = (False, True)
"""The references as taken, or also turned by a quarter, a half and three quarters: a
camera that sees the part from any side sees it at any roll too, and a turned reference
may then be the nearest view. Measured on this render before the sweep, the distance
alone with turned references ranked the six objects' images better (and duck and lego's
a little better); mirrored references added nothing, so they are not swept."""
REFDIFF_SIGMAS = (1.4, 3.0, 6.0)
Key = TypeVar("Key")
EDGE = "edge fused,"  # + the checkpoint's training steps: one row group per run
GENERIC = "generic,"  # likewise, for the generic-model candidates


def fused_sweep(
    model,
    episodes,
    options: EvalOptions,
    seed: int,
    suffix: str,
    reference_weights: tuple[float, ...] = REFERENCE_WEIGHTS,
) -> dict[str, dict]:
    """'lab weight W, reference R[ at zoom Z][ with quarter turns], READOUT' + ``suffix`` ->
    the setting as one job's scoring (``scoring``) and its mean figures, for every weight of
    FUSED_WEIGHTS and REFERENCE_WEIGHTS, zoom of REFERENCE_ZOOMS, turns of REFERENCE_TURNS
    and readout of READOUTS: one reconstruction per query, scored once per setting."""
    sweep = FusionSweepScorer(
        model,
        FUSED_WEIGHTS,
        READOUTS,
        reference_weights,
        seed=seed,
        reference_zooms=REFERENCE_ZOOMS,
        reference_turns=REFERENCE_TURNS,
    )
    run_scorer(sweep, episodes, options)
    return {
        setting_label(setting) + suffix: {
            "scoring": job_of(setting),
            **summarise(run_scorer(ReplayScorer(results), episodes, options)[0], per_defect=False)[
                "mean"
            ],
        }
        for setting, results in sweep.results.items()
    }


def job_of(setting: FusedSetting) -> dict:
    """A sweep setting as one job's scoring settings (``JobScoring``'s keys, as JSON): what
    its row records and a choice becomes (a zoom or turns without a reference term are 1
    and false, as scored)."""
    mix = setting.mix
    return {
        "lab_weight": float(mix.lab_weight),
        "reference_weight": float(mix.reference_weight),
        "reference_zoom": mix.zoom,
        "reference_turns": mix.turns,
        "consistency_filter": setting.readout.consistency_filter,
        "sigma": float(setting.readout.sigma),
    }


def setting_label(setting: FusedSetting) -> str:
    """How the sweep's rows name a setting for a reader: 'lab weight 0.25, reference 12,
    mean, sigma 8' ('reference 12 at zoom 2 with quarter turns' for a zoomed distance to
    turned references). A name only: the row's ``scoring`` holds the setting."""
    mix, readout = setting.mix, setting.readout
    term = f"reference {mix.reference_weight:g}"
    term += f" at zoom {mix.zoom}" if mix.zoom > 1 else ""
    term += f" {TURNS_TEXT}" if mix.turns else ""
    reading = f"{'filtered' if readout.consistency_filter else 'mean'}, sigma {readout.sigma:g}"
    return f"lab weight {mix.lab_weight:g}, {term}, {reading}"


def run_label(metadata: dict) -> str:
    """'N steps', or 'N steps after FOLDER/FILE' for a run fine-tuned from other weights
    (train --init), so that continued runs are told apart from fresh ones of equal length."""
    label = f"{metadata.get('global_step')} steps"
    init = metadata.get("init")
    if init:
        path = Path(init["path"])
        label += f" after {path.parent.name}/{path.name}"
    return label


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


def row_scoring(method: str, setting: str, row: dict) -> JobScoring:
    """The setting a fused row was scored with (its ``scoring``); a row written before
    rows carried it is a UserError naming the fix. Not held to the product's bounds: a
    side sweep scores weights past them (``--reference-weight``), and a choice among
    them is checked where it is used (``models/ship.py`` validates what it ships)."""
    if "scoring" not in row:
        raise UserError(
            f"validation row '{method}' / '{setting}' holds no scoring (written before rows "
            "carried their setting); sweep that checkpoint again with --checkpoint or "
            "--generic."
        )
    return JobScoring.model_construct(**row["scoring"])


def is_swept_readout(method: str, setting: str, row: dict) -> bool:
    """A fused row other than the paper's (filtered, unsmoothed, no reference term)."""
    if not method.startswith((EDGE, GENERIC)):
        return False
    job = row_scoring(method, setting, row)
    paper = job.consistency_filter == PAPER_READOUT.consistency_filter
    paper = paper and job.sigma == PAPER_READOUT.sigma
    return not paper or (job.reference_weight or 0.0) > 0


def patchcore_scorer(config: str) -> PatchCoreScorer:
    return PatchCoreScorer(*parse_config(config))


def best(rows: dict[Key, dict]) -> Key:
    """The configuration with the highest mean image AUROC (AUPRO breaks ties)."""
    return max(rows, key=lambda k: (rows[k]["image_auroc"] or 0, rows[k]["aupro"] or 0))


def best_map(rows: dict[Key, dict]) -> Key:
    """The configuration whose maps outline defects best: AUPRO (pixel AUROC breaks ties)."""
    return max(rows, key=lambda k: (rows[k]["aupro"] or 0, rows[k]["pixel_auroc"] or 0))


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


def scored_on(rows: dict[str, dict], images: int) -> bool:
    """Whether every scored row of a group was scored on ``images`` images."""
    scored = [row for row in rows.values() if "image_auroc" in row]
    return bool(scored) and all(row.get("images") == images for row in scored)


def drop_other_samples(
    results: dict[str, dict[str, dict]], prefix: str, images: int
) -> dict[str, dict[str, dict]]:
    """``results`` without the groups named ``prefix``... that an earlier run scored on
    another number of images (another ``--max-per-label``). Their figures rank settings on
    another sample, with another noise level: the best of 126 settings on 120 images read
    about 5 points higher than the same setting on 360, so a choice across the two samples
    would mostly pick the smaller one's luck."""
    return {
        method: rows
        for method, rows in results.items()
        if not method.startswith(prefix) or scored_on(rows, images)
    }


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
