"""How much do a model's references change its scores? (a diagnostic, no ground truth)

PADFormer is meant to reconstruct a query from its references, so the references should
matter: a good view scored against good references of its own part should score lower
than against references of nothing. This scores the first good test views of each class
with one checkpoint, 15 passes, against several sets of four good training views of
that class (random, seeded) and against four black images, and reports per scoring:

- ``spread over good sets``: (largest - smallest) / mean score of a view over the good
  reference sets, averaged over views: how much the choice of good references matters;
- ``black / good``: a view's score against black references over its mean score against
  good ones, averaged: above 1 when the references are read at all;
- ``hidden patches: black / good`` (models with CNN tokens): the same ratio for the
  predicted-feature error averaged over the patches the passes hid, before any readout:
  whether the decoder reads its references where it must, even when the image score (a
  maximum over the map) does not show it.

Scorings: the model's own default (the product's), and the same with both nearest-
reference weights at 0 (the reconstruction alone). Prints a table and one JSON line;
``--write-docs`` puts the table in the docs' ``reference-use`` block (``--section``
names another). ``--model`` repeats to compare checkpoints, and
``--reconstruction-only`` keeps the one row that asks what the training taught.

    python benchmarks/reference_use.py --model padformer_edge/models/generic.safetensors \
        --data data/synth224-s1 --class duck --class lego --write-docs
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.detector import Detector
from padformer_edge.detect.images import read_image
from padformer_edge.detect.scoring import resolve_metric
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import scoring_signature, signature_text
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.simple_rows import reconstruction_only

SHOTS = 4


def scores(
    model, references: list[np.ndarray], queries: list[np.ndarray], settings: DetectionSettings
) -> np.ndarray:
    detector = Detector(model, references, settings)
    return np.array([d.score for d in detector.detect(queries)])


@torch.inference_mode()
def hidden_errors(detector: Detector, queries: list[np.ndarray]) -> np.ndarray:
    """Per query, the predicted-feature error averaged over the patches its passes hid."""
    errors = []
    for image in queries:
        model_in = detector.to_model_input(image).unsqueeze(0)
        _, features = detector.reconstruct(model_in)
        per_patch = (features - detector.model.target_features(model_in)).square().mean(-1)
        errors.append(float(per_patch[detector.masks].mean()))
    return np.array(errors)


def hidden_ratio(
    model, classes: dict[str, tuple[list, list]], sets: int, seed: int, settings: DetectionSettings
) -> float:
    """``hidden patches: black / good`` over every view, the same reference draws as
    ``measure``."""
    ratios = []
    for pool, queries in classes.values():
        rng = random.Random(seed)
        good = np.stack(
            [
                hidden_errors(Detector(model, rng.sample(pool, SHOTS), settings), queries)
                for _ in range(sets)
            ]
        )
        black = [np.zeros_like(pool[0])] * SHOTS
        ratios += list(hidden_errors(Detector(model, black, settings), queries) / good.mean(0))
    return float(np.mean(ratios))


def measure(
    model,
    classes: dict[str, tuple[list, list]],
    sets: int,
    seed: int,
    settings: DetectionSettings,
) -> dict:
    spreads, ratios = [], []
    for pool, queries in classes.values():
        rng = random.Random(seed)
        good = np.stack(
            [scores(model, rng.sample(pool, SHOTS), queries, settings) for _ in range(sets)]
        )
        black = scores(model, [np.zeros_like(pool[0])] * SHOTS, queries, settings)
        spreads += list((good.max(0) - good.min(0)) / good.mean(0))
        ratios += list(black / good.mean(0))
    return {"spread": float(np.mean(spreads)), "black_ratio": float(np.mean(ratios))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", required=True, help="repeatable")
    parser.add_argument(
        "--reconstruction-only",
        action="store_true",
        help="only the reconstruction-alone row of each model",
    )
    parser.add_argument("--section", default="reference-use", help="docs block to write")
    parser.add_argument("--data", type=Path, required=True, help="a validation render")
    parser.add_argument("--class", dest="classes", action="append", help="repeatable")
    parser.add_argument("--views", type=int, default=6, help="good test views per class")
    parser.add_argument("--sets", type=int, default=4, help="good reference sets per view")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--mask-ratio", type=float, default=0.4, help="share of patches each pass hides"
    )
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


def model_names(paths: list[Path]) -> dict[Path, str]:
    """Each checkpoint's file name, or every one with its folder where two files share a
    name (runs keep ``model.safetensors`` in a folder named after the run)."""
    names = [p.name for p in paths]
    clash = len(set(names)) < len(names)
    return {p: f"{p.parent.name}/{p.name}" if clash else p.name for p in paths}


def run(args: argparse.Namespace) -> None:
    index = index_dataset(args.data, categories=args.classes)
    train = index.good_train()
    classes = {}
    for name, paths in sorted(train.items()):
        good_tests = [
            r.path for r in index.records if r.category == name and r.split == "test" and r.is_good
        ][: args.views]
        if len(paths) < SHOTS or not good_tests:
            raise UserError(f"class {name} in {args.data} has too few good views for this.")
        classes[name] = ([read_image(p) for p in paths], [read_image(p) for p in good_tests])
    settings = DetectionSettings(device="cpu", mask_ratio=args.mask_ratio)
    names = model_names(args.model)
    rows, payload = [], {}
    for path in args.model:
        model, _ = load_checkpoint(path)
        model.eval()
        hidden = (
            hidden_ratio(model, classes, args.sets, args.seed, settings)
            if model.config.cnn_tokens
            else None
        )  # the reconstruction is the same whichever scoring reads it
        scorings = [("reconstruction alone", reconstruction_only(model))]
        if not args.reconstruction_only:
            scorings.insert(0, ("the model's own", model))
        for label, scored_model in scorings:
            signature = scoring_signature(*resolve_metric("auto", scored_model))
            figures = measure(scored_model, classes, args.sets, args.seed, settings)
            name = label if len(args.model) == 1 else f"{names[path]}: {label}"
            payload[name] = {**figures, "scoring": signature, "hidden_black_ratio": hidden}
            rows.append(
                [
                    name,
                    f"`{signature_text(signature)}`",
                    f"{100 * figures['spread']:.1f} %",
                    f"{figures['black_ratio']:.2f}",
                    "" if hidden is None else f"{hidden:.2f}",
                ]
            )
    headers = [
        "scoring", "signature", "spread over good sets", "black / good",
        "hidden patches: black / good",
    ]  # fmt: skip
    table = markdown_table(headers, rows)
    views = sum(len(q) for _, q in classes.values())
    caption = (
        f"{', '.join(names.values())}, {views} good test views of "
        f"{', '.join(classes)} in "
        f"{args.data.name}, each against {args.sets} random sets of {SHOTS} good training "
        f"views (seed {args.seed}) and against {SHOTS} black images; 15 passes hiding "
        f"{args.mask_ratio:g} of the patches each."
    )
    print(table + "\n\n" + caption)
    models = list(names.values())
    print_json_line("reference_use", {"models": models, "views": views, **payload})
    if args.write_docs:
        update_docs_section(args.section, f"{table}\n\n{caption}")


if __name__ == "__main__":
    main()
