"""The model's image-AUROC margin over the validated PatchCore on several test renders.

One test render is one draw of viewpoints, defects and references. Scored on 360 images
each, the validation render (seed 1) had the edge model ahead of PatchCore and the test
render (seed 0) had it behind, while each render's image bootstrap called its own sign
settled: the bootstrap redraws images, not renders. This benchmark renders nothing
itself; give it renders made with other seeds (``padformer-edge synth ... --seed N``, the
same objects and size as the test render) and it scores the model's default row and the
validated PatchCore on each, with the quality benchmark's protocol, and reports each
render's margin and the margin averaged over all of them with a bootstrap that redraws
the renders too (``padformer_edge_training.evaluation.uncertainty.margin_over_renders``).

The validation render is refused: settings were chosen on it, so its margin is biased
towards the model. Nothing is chosen here; the settings are those the model and
``benchmarks/validation.json`` carry.

    python benchmarks/render_spread.py --model padformer_edge/weights/generic.safetensors \
        --render data/synth224 --render data/synth224-s2 --render data/synth224-s3 \
        --class duck --class lego --max-per-label 15 --threads 2 --write-docs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (
    add_episode_arguments,
    markdown_table,
    parse_and_run,
    print_json_line,
    update_docs_section,
)
from benchmarks.quality import (
    MARGIN_OVER_PATCHCORE,
    baselines,
    evaluate_scored,
    main_label,
    padformer_row,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    EvalOptions,
    ImageResult,
    mean_of,
    plan_episodes,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.uncertainty import (
    MarginInterval,
    image_auroc_margin,
    margin_over_renders,
)

VALIDATION_SEED = 1  # docs/research.md: the validation render is `synth ... --seed 1`
SECTION = "quality-renders"


def render_seed(root: Path) -> int:
    """The seed a ``padformer-edge synth`` render records in its ``dataset.json``."""
    manifest = root / "dataset.json"
    try:
        return int(json.loads(manifest.read_text(encoding="utf-8"))["seed"])
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(
            f"{manifest} does not record a seed; give renders made by padformer-edge synth."
        ) from None


def check_renders(renders: list[Path], validation_seed: int) -> list[int]:
    """Each render's seed; the validation render and a render given twice are refused."""
    seeds = [render_seed(root) for root in renders]
    for root, seed in zip(renders, seeds, strict=True):
        if seed == validation_seed:
            raise UserError(
                f"{root} is the validation render (seed {seed}): settings were chosen on it, "
                "so it cannot test them; render another seed."
            )
    if len(set(seeds)) < len(seeds):
        raise UserError(f"two --render folders share a seed ({seeds}); give each seed once.")
    return seeds


RenderScores = tuple[list[ImageResult], list[ImageResult]]
"""The model's and PatchCore's per-image results on one render, paired image by image."""


def score_render(
    root: Path, rows: list, classes: list[str] | None, options: EvalOptions
) -> tuple[dict[str, dict], RenderScores]:
    """Both rows' mean figures on one render, and their per-image results."""
    episodes = plan_episodes(index_dataset(root, categories=classes), options)
    results, scored = evaluate_scored(rows, episodes, options)
    (model_label, _), (patchcore_label, _) = rows
    return results, (scored[model_label], scored[patchcore_label])


def table_row(name: str, images: int, figures: list[dict], margin: MarginInterval) -> list:
    """One line of the table: the model's and PatchCore's ``figures`` (means over the
    renders the line covers) and the margin with its interval."""
    mine, theirs = figures
    return [
        name,
        images,
        fmt(mine["image_auroc"]),
        fmt(theirs["image_auroc"]),
        margin.brief(),
        fmt(mine["aupro"]),
        fmt(theirs["aupro"]),
    ]


def run(args: argparse.Namespace) -> None:
    if not args.render:
        raise UserError("give at least one --render DIR (a test render, not the validation one).")
    seeds = check_renders(args.render, args.validation_seed)
    model, metadata = load_checkpoint(args.model)
    classes = list(args.class_) or None
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    label = main_label(model)
    patchcore_label, patchcore_scorer = baselines()[0]
    settings = DetectionSettings(metric="auto", seed=args.seed, device="cpu")
    rows = [padformer_row(label, model, settings), (patchcore_label, patchcore_scorer)]
    table, pairs, renders = [], [], []
    for root, seed in zip(args.render, seeds, strict=True):
        results, pair = score_render(root, rows, classes, options)
        interval = image_auroc_margin(*pair, seed=args.seed)
        figures = [results[label], results[patchcore_label]]
        table.append(table_row(f"{root.name} (seed {seed})", len(pair[0]), figures, interval))
        pairs.append(pair)
        renders.append(
            {
                "render": str(root),
                "seed": seed,
                "methods": results,
                "margin_over_patchcore": dataclasses.asdict(interval),
            }
        )
    pooled = margin_over_renders(pairs, seed=args.seed)
    means = [
        mean_of([r["methods"][method] for r in renders]) for method in (label, patchcore_label)
    ]
    images = sum(len(pair[0]) for pair in pairs)
    table.append(table_row(f"mean over {len(renders)} renders", images, means, pooled))
    met = pooled.margin >= MARGIN_OVER_PATCHCORE
    objects = ", ".join(classes) if classes else "every object of the renders"
    if classes and not set(metadata.get("train_images", {})) & set(classes):
        objects = f"objects it never saw ({objects})"
    summary = (
        f"{args.model.name} (step {metadata.get('global_step')}) on {objects}, "
        f"{args.shots}-shot, random references (seed {args.seed}), first "
        f"{args.max_per_label} test images of every label, 15 passes, against {patchcore_label}; "
        "image AUROC and AUPRO in %, mean over objects. Margin: image AUROC points with its "
        "95% paired bootstrap interval, per render over its test images, and on the last "
        f"row over {pooled.resamples} resamples of {pooled.redrawn}. Target: a margin of at "
        f"least {100 * MARGIN_OVER_PATCHCORE:.0f} points; {'met' if met else 'not met'} on "
        "the mean over renders."
    )
    headers = [
        "test render",
        "images",
        "PADFormer image AUROC",
        "PatchCore image AUROC",
        "margin [95% interval]",
        "PADFormer AUPRO",
        "PatchCore AUPRO",
    ]
    body = markdown_table(headers, table) + "\n\n" + summary
    print(body)
    print_json_line(
        "render_spread",
        {
            "model": str(args.model),
            "renders": renders,
            "margin_over_patchcore": dataclasses.asdict(pooled),
            "target_met": met,
        },
    )
    if args.write_docs:
        update_docs_section(args.section, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="An edge or generic model.")
    parser.add_argument(
        "--render",
        type=Path,
        action="append",
        default=[],
        help="A test render (padformer-edge synth --seed N); repeat for several seeds.",
    )
    parser.add_argument(
        "--validation-seed",
        type=int,
        default=VALIDATION_SEED,
        help="The seed of the render settings were chosen on; refused as a test render.",
    )
    add_episode_arguments(parser, SECTION)
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
