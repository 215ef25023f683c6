"""PatchCore on each EfficientNet-Lite backbone, on the validation render: which to offer.

Issue 30 asks for EfficientNet-Lite2 beside Lite0 and for the choice to be made on
validation. This benchmark scores one PatchCore configuration (by default the validated
one, ``benchmarks/validation.json``'s ``patchcore``) once per backbone of
``model.config.BACKBONES`` with the quality benchmark's protocol (same episodes, same
references, CPU seconds per image), and reports each backbone's figures and the image
AUROC margin of every other backbone over Lite0 with its paired bootstrap interval.

Only the validation render is accepted (the seed its ``dataset.json`` records): a
backbone chosen on a test render would bias every later comparison towards it. Nothing
is chosen here: the full sweep (``benchmarks/tune_validation.py``, which offers Lite2
rows too) is what changes ``validation.json``; ``--write-docs`` puts the table in the
research page's ``backbone-validation`` block.

    nice -n 10 python research/backbone_validation.py --data data/val-s1 \
        --max-per-label 6 --threads 1
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from benchmarks.quality import evaluate_scored, validated_choices
from benchmarks.render_spread import VALIDATION_SEED, render_seed
from padformer_edge.errors import UserError
from padformer_edge.model.config import BACKBONES, DEFAULT_BACKBONE
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.patchcore import PatchCoreScorer, parse_config
from padformer_edge_training.evaluation.protocol import METRICS, EvalOptions, plan_episodes
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.uncertainty import image_auroc_margin


def configurations(text: str, backbones: list[str]) -> list[str]:
    """``text`` (any backbone word it has replaced) once per backbone, Lite0 first when
    it is among them: the row every margin is taken over."""
    base = parse_config(text)
    unknown = sorted(set(backbones) - set(BACKBONES))
    if unknown:
        raise UserError(
            f"unknown --backbone {', '.join(unknown)}; choose from {', '.join(BACKBONES)}."
        )
    ordered = sorted(dict.fromkeys(backbones), key=lambda b: b != DEFAULT_BACKBONE)
    return [base._replace(backbone=b).text for b in ordered]


SECTION = "backbone-validation"


def run(args: argparse.Namespace) -> None:
    seed = render_seed(args.data)
    if seed != args.validation_seed:
        raise UserError(
            f"{args.data} is the render of seed {seed}, not the validation render "
            f"(seed {args.validation_seed}); choose backbones on validation data only."
        )
    config = args.config or validated_choices()["patchcore"]
    texts = configurations(config, args.backbone or list(BACKBONES))
    classes = list(args.class_) or None
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    episodes = plan_episodes(index_dataset(args.data, categories=classes), options)
    rows = [(f"PatchCore {text}", PatchCoreScorer(*parse_config(text))) for text in texts]
    results, scored = evaluate_scored(rows, episodes, options)
    first = rows[0][0]
    margins = {
        label: image_auroc_margin(scored[label], scored[first], seed=args.seed)
        for label, _ in rows[1:]
    }
    headers = [
        "method", "image AUROC", "pixel AUROC", "AUPRO", "CPU s / image",
        f"image AUROC over {first} [95%]",
    ]  # fmt: skip
    table = [
        [
            label,
            *(fmt(results[label][m]) for m in METRICS),
            f"{results[label]['cpu_s_per_image']:.3f}",
            margins[label].brief() if label in margins else "",
        ]
        for label, _ in rows
    ]
    images = len(scored[first])
    objects = ", ".join(sorted(results[first]["image_auroc_by_class"]))
    caption = (
        f"{args.data.name} (seed {seed}, {objects}), {images} images: the first "
        f"{args.max_per_label} test images of every label, {args.shots}-shot, random "
        f"references (seed {args.seed}); figures in %, mean over objects."
    )
    body = markdown_table(headers, table) + "\n\n" + caption
    print(body)
    print_json_line(
        "backbone_validation",
        {
            "data": str(args.data),
            "render_seed": seed,
            "images": images,
            "options": dataclasses.asdict(options),
            "methods": results,
            "margins_over_first": {k: dataclasses.asdict(v) for k, v in margins.items()},
        },
    )
    if args.write_docs:
        update_docs_section(SECTION, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="The validation render.")
    parser.add_argument(
        "--config",
        help="PatchCore configuration, e.g. '2@448 turned'; default the validated one.",
    )
    parser.add_argument(
        "--backbone",
        action="append",
        default=[],
        help=f"Score on this backbone (repeat); default all: {', '.join(BACKBONES)}.",
    )
    parser.add_argument(
        "--class", dest="class_", metavar="NAME", action="append", default=[],
        help="Score only this object (repeat); default every object of the render.",
    )  # fmt: skip
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0, help="The reference draw's seed.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--validation-seed", type=int, default=VALIDATION_SEED)
    parser.add_argument("--write-docs", action="store_true", help=f"Write the {SECTION} block.")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
