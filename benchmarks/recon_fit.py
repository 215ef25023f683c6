"""Is a trained model held back by what it saw, or by what it could learn from it?

The reconstruction error of views the model was trained on is set against that of good
views it never saw, of the same objects, for each checkpoint given (for example the
within-view and the final checkpoint of one run). Every image is reconstructed with the
Detector's masked passes from references drawn (seeded) from the training views, never
the image itself; the error is the mean squared RGB error over masked patches only,
because visible patches can be copied from the query and so say little about what the
model learned (the training loss itself covers every patch).

Reading it: a model that rebuilds its training views much better than unseen ones is
limited by data (more views or objects would help); equal errors mean it has not fit
even the views it saw, so steps or capacity limit it, and a later checkpoint that is
not lower than an earlier one says steps alone no longer help.

    python benchmarks/recon_fit.py --data data/synth \
        --checkpoint runs/small-synth/within_view.safetensors \
        --checkpoint runs/small-synth/model.safetensors --write-docs
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
from padformer_edge.detect.detector import Detector
from padformer_edge.detect.images import read_image
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.evaluation.recon_fit import masked_error, sample_images


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--checkpoint", type=Path, action="append", required=True)
    parser.add_argument("--per-class", type=int, default=8)
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    images = sample_images(args.data, args.per_class, args.seed)
    rows, payload = [], []
    for checkpoint in args.checkpoint:
        model, metadata = load_checkpoint(checkpoint)
        errors: dict[str, list[float]] = {"train": [], "held-out": []}
        for split, image, references in images:
            settings = DetectionSettings(
                passes=args.passes, schedule="balanced", seed=args.seed, device="cpu"
            )
            detector = Detector(model, [read_image(p) for p in references], settings)
            errors[split].append(masked_error(detector, image))
        train, held_out = (sum(e) / len(e) for e in (errors["train"], errors["held-out"]))
        stage, step = metadata.get("stage"), metadata.get("global_step")
        label = f"{checkpoint.parent.name}/{checkpoint.name} ({stage}, step {step})"
        rows.append([label, train, held_out, held_out / train])
        payload.append(
            {
                "checkpoint": str(checkpoint),
                "stage": metadata.get("stage"),
                "step": metadata.get("global_step"),
                "train_mse": train,
                "held_out_mse": held_out,
                "ratio": held_out / train,
            }
        )
    headers = ["checkpoint", "training views MSE", "unseen views MSE", "unseen / training"]
    table = markdown_table(headers, rows)
    counts = sum(1 for split, *_ in images if split == "train"), len(images)
    note = (
        f"{counts[0]} training and {counts[1] - counts[0]} unseen good views "
        f"({args.per_class} per class and split), 4 references each, {args.passes} balanced "
        "passes; masked patches only, RGB in [0, 1]."
    )
    print(table)
    print(note)
    print_json_line("recon_fit", {"images": counts[1], "checkpoints": payload})
    if args.write_docs:
        update_docs_section("recon_fit", f"{table}\n\n{note}")


if __name__ == "__main__":
    main()
