"""Few-shot detection quality of PADFormer against the methods a user would otherwise
pick, all on the same test images with the same references, in one run.

Rows: PADFormer (LAB error, 15 passes, the paper's inference); few-shot PatchCore on
ImageNet EfficientNet-Lite0 features; the LAB difference to the nearest reference; the
error metrics of the paper's Table 4 (rgb, feature) and pass counts 5/10/20, all on the
one checkpoint (inference-time choices); and the Table 3 ablations (no STN / no
selection / no AAT) only from checkpoints trained without that module, given with
``--ablation NAME=PATH`` or trained with the same recipe under ``--train-ablations``.
Switching a module off at inference in a model trained with it would not be the paper's
ablation, so that is never done. ``--compare LABEL=PATH`` adds a row for another
checkpoint, such as a longer run of the same recipe.

Evaluation size: the first ``--max-per-label`` (default 5) test images of every label of
every class (good and each defect type), i.e. 120 images for the six builtins, which
keeps the whole comparison to a few minutes of a 2-core CPU. The images and references
are fixed before any method runs; nothing is tuned on them.

    python benchmarks/quality.py --checkpoint runs/small-synth/model.safetensors \
        --data data/synth --write-readme
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_readme_section
from padformer_edge.config import load_config
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from training.config import TrainConfig
from training.data.layouts import index_dataset
from training.evaluation.patchcore import PatchCoreScorer
from training.evaluation.protocol import METRICS, EvalOptions, plan_episodes, run_scorer, summarise
from training.evaluation.refdiff import ReferenceDifferenceScorer
from training.evaluation.report import fmt
from training.evaluation.scorers import PADFormerScorer, Scorer

BUILTINS = ("duck", "soccerball", "teddy", "bunny", "mug", "lego")
ABLATIONS = {"no_stn": "use_stn", "no_selection": "use_selection", "no_aat": "use_aat"}
RECIPE = Path("config/train/small-synth.yaml")
MAIN = "PADFormer (lab, 15 passes)"
BASELINES = ("PatchCore (EfficientNet-Lite0)", "reference difference (LAB)")


def render_builtins(out: Path) -> Path:
    """The dataset of the small-synth recipe: six builtins at 128 px, seed 0."""
    from training.synth import ViewCounts, render_dataset

    meshes = [f"builtin:{name}" for name in BUILTINS]
    return render_dataset(meshes, out, ViewCounts(), size=128, seed=0)


def train(recipe: TrainConfig, data: Path, out: Path, **overrides: bool) -> Path:
    from training.trainer import run_training

    if overrides:
        model = recipe.model.model_copy(
            update={"overrides": {**recipe.model.overrides, **overrides}}
        )
        recipe = recipe.model_copy(update={"model": model})
    return run_training(recipe, data, out, resume=(out / "last.resume.pt").exists()).checkpoint


def ablation_model(name: str, path: Path):
    """The checkpoint of ablation ``name``; it must have been trained without the module."""
    model, _ = load_checkpoint(path)
    flag = ABLATIONS[name]
    if getattr(model.config, flag):
        raise UserError(
            f"ablation checkpoint {path} was trained with {flag}=true; give one trained "
            f"with model.overrides.{flag}: false (or use --train-ablations)."
        )
    return model


def split_named_path(text: str, expected: str) -> tuple[str, Path]:
    """``NAME=PATH`` -> (NAME, PATH); ``expected`` says what a malformed value should be."""
    name, _, path = text.partition("=")
    if not name or not path:
        raise argparse.ArgumentTypeError(f"expected {expected}")
    return name, Path(path)


def parse_ablation(text: str) -> tuple[str, Path]:
    expected = f"NAME=PATH with NAME in {sorted(ABLATIONS)}"
    name, path = split_named_path(text, expected)
    if name not in ABLATIONS:
        raise argparse.ArgumentTypeError(f"expected {expected}")
    return name, path


def parse_compare(text: str) -> tuple[str, Path]:
    return split_named_path(text, "LABEL=PATH, e.g. long=runs/long/model.safetensors")


def compared_model(label: str, path: Path):
    """(row label naming the run and its step, model) of a checkpoint given with --compare."""
    model, metadata = load_checkpoint(path)
    return f"PADFormer, {label} (step {metadata.get('global_step')})", model


def methods(args: argparse.Namespace, checkpoint: Path, ablations: dict[str, Path]):
    """(label, scorer) in table order; PADFormer variants share one set of weights."""
    model, _ = load_checkpoint(checkpoint)

    def padformer(label: str, net=model, **options) -> tuple[str, Scorer]:
        settings = DetectionSettings(seed=args.seed, device="cpu", **options)
        return label, PADFormerScorer(net, label, settings)

    rows: list[tuple[str, Scorer]] = [
        padformer(MAIN),
        (BASELINES[0], PatchCoreScorer()),
        (BASELINES[1], ReferenceDifferenceScorer()),
    ]
    for name, path in ablations.items():
        rows.append(
            padformer(f"PADFormer {name.replace('_', ' ')} (trained)", ablation_model(name, path))
        )
    rows += [padformer(*compared_model(label, path)) for label, path in args.compare]
    rows += [
        padformer(f"PADFormer ({metric}, 15 passes)", metric=metric)
        for metric in ("rgb", "feature")
    ]
    rows += [padformer(f"PADFormer (lab, {n} passes)", passes=n) for n in (5, 10, 20)]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", type=Path, help="Reuse this model (else train one).")
    parser.add_argument("--data", type=Path, help="Dataset root (else render the builtins).")
    parser.add_argument("--work", type=Path, default=Path("runs/quality"), help="Scratch folder.")
    parser.add_argument("--recipe", type=Path, default=RECIPE)
    parser.add_argument("--ablation", type=parse_ablation, action="append", default=[])
    parser.add_argument("--train-ablations", action="store_true", help="Train missing ablations.")
    parser.add_argument(
        "--compare",
        type=parse_compare,
        action="append",
        default=[],
        help="LABEL=PATH: one more row from another checkpoint (e.g. a longer run).",
    )
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-readme", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    try:
        run(args)
    except UserError as err:
        sys.exit(f"error: {err}")


def run(args: argparse.Namespace) -> None:
    data = args.data or render_builtins(args.work / "data")
    recipe = load_config(args.recipe, TrainConfig)
    checkpoint = args.checkpoint or train(recipe, data, args.work / "small-synth")
    ablations = dict(args.ablation)
    if args.train_ablations:
        for name, flag in ABLATIONS.items():
            if name not in ablations:
                ablations[name] = train(recipe, data, args.work / name, **{flag: False})
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    episodes = plan_episodes(index_dataset(data), options)
    images = sum(len(e.tests) for e in episodes)
    _, metadata = load_checkpoint(checkpoint)
    results = {}
    for label, scorer in methods(args, checkpoint, ablations):
        scored, cpu = run_scorer(scorer, episodes, options)
        results[label] = {**summarise(scored)["mean"], "cpu_s_per_image": round(cpu, 4)}
        print(f"{label}: {results[label]}", file=sys.stderr, flush=True)

    headers = ["method", "image AUROC", "pixel AUROC", "AUPRO", "CPU s / image"]
    rows = [
        [k, *(fmt(v[m]) for m in METRICS), f"{v['cpu_s_per_image']:.3f}"]
        for k, v in results.items()
    ]
    table = markdown_table(headers, rows)
    main_row = results[MAIN]
    beats = {
        m: all((main_row[m] or 0) > (results[b][m] or 0) for b in BASELINES)
        for m in ("image_auroc", "pixel_auroc")
    }
    targets = {
        "image_auroc>=0.80": (main_row["image_auroc"] or 0) >= 0.80,
        "pixel_auroc>=0.90": (main_row["pixel_auroc"] or 0) >= 0.90,
        "beats_baselines_image_auroc": beats["image_auroc"],
        "beats_baselines_pixel_auroc": beats["pixel_auroc"],
    }
    step = metadata.get("global_step")
    summary = (
        f"{args.shots}-shot, random references (seed {args.seed}), first {args.max_per_label} test "
        f"images of every label of every class ({images} images, {len(episodes)} classes); "
        f"mean over classes, in %. Checkpoint {checkpoint.name} (stage {metadata.get('stage')}, "
        f"step {step}). CPU seconds per image on {args.threads} thread(s). Targets for the "
        f"PADFormer row: "
        + ", ".join(f"{k}: {'met' if v else 'not met'}" for k, v in targets.items())
        + "."
    )
    print(table + "\n\n" + summary)
    print_json_line(
        "quality",
        {
            "checkpoint": str(checkpoint),
            "checkpoint_stage": metadata.get("stage"),
            "checkpoint_step": step,
            "data": str(data),
            "options": dataclasses.asdict(options),
            "images": images,
            "methods": results,
            "targets": targets,
        },
    )
    if args.write_readme:
        update_readme_section("quality", f"{table}\n\n{summary}")


if __name__ == "__main__":
    main()
