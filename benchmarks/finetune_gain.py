"""Does `train --init generic` help on a part the generic model never saw?

Renders one held-out part (a builtin the model card lists as held out), fine-tunes the
generic model on that part's good training views only (the `folder` layout a user would
give it: no defects, no masks), and scores the part's test views with both models on the
same 4-shot episodes (same references, same masks, same seed), each with its shipped
fused scoring and with the reconstruction alone. Prints a markdown table (image AUROC,
pixel AUROC, AUPRO; before and after) and one JSON line; with
--write-docs the table replaces the `finetune-gain` docs block.

    python benchmarks/finetune_gain.py [--generic PATH] [--part builtin:duck] \
        [--train-views 60] [--epochs 2] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, print_json_line, update_docs_section
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.log import configure_logging
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.models import locate_generic_model, read_card
from padformer_edge_training.config import TrainConfig
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from padformer_edge_training.evaluation.simple_rows import reconstruction_only
from padformer_edge_training.synth import ViewCounts, render_dataset
from padformer_edge_training.trainer import run_training


def fine_tune_recipe(args: argparse.Namespace) -> TrainConfig:
    """Cross-view epochs only, at a tenth of the generic recipe's learning rate: the
    weights should adapt to the part, not forget everything else."""
    return TrainConfig.model_validate({
        "data": {"layout": "folder", "num_refs": 4, "num_workers": 0},
        "loss": {"perceptual": "none"},
        "optim": {"lr": args.lr, "min_lr": args.lr / 10, "batch_size": args.batch_size,
                  "warmup_steps": 5},
        "stages": {"within_view": {"epochs": 0}, "cross_view": {"epochs": args.epochs}},
        "checkpoint": {"every_steps": 100_000},
        "seed": args.seed,
        "cpu_threads": args.threads,
    })  # fmt: skip


def evaluate(model, label: str, episodes: list, seed: int) -> dict:
    """Mean metrics of one model over the part's 4-shot episodes."""
    scorer = PADFormerScorer(model, label, DetectionSettings(seed=seed, device="cpu"))
    results, _ = run_scorer(scorer, episodes, EvalOptions(seed=seed))
    return summarise(results)["mean"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generic", type=Path, help="default: the shipped generic model")
    parser.add_argument("--part", help="builtin:NAME (default: the card's first held-out part)")
    parser.add_argument("--train-views", type=int, default=60)
    parser.add_argument("--test-views-per-defect", type=int, default=5)
    parser.add_argument("--good-test-views", type=int, default=10)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=4e-5)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    args = parser.parse_args()
    configure_logging("json", "WARNING")  # stdout: the table and the JSON line only
    torch.set_num_threads(args.threads)
    generic = args.generic or locate_generic_model()
    part = args.part
    if part is None:
        held_out = read_card(generic).get("held_out") or []
        if not held_out:
            raise SystemExit("the model card lists no held-out part; pass --part builtin:NAME.")
        part = held_out[0]
    model, _ = load_checkpoint(generic)
    size = model.config.img_size
    with tempfile.TemporaryDirectory(prefix="finetune-gain-") as tmp:
        work = Path(tmp)
        counts = ViewCounts(args.train_views, args.test_views_per_defect, args.good_test_views)
        data = render_dataset([part], work / "data", counts, size=size, seed=args.seed)
        (class_dir,) = [d for d in data.iterdir() if d.is_dir()]
        started = time.perf_counter()
        summary = run_training(
            fine_tune_recipe(args), class_dir / "train" / "good", work / "run", init=generic
        )
        seconds = time.perf_counter() - started
        assert summary.checkpoint is not None and not summary.interrupted
        tuned, _ = load_checkpoint(summary.checkpoint)
        # Each model with its shipped scoring and with the reconstruction alone (reference
        # weights 0): fine-tuning can only change the reconstruction, never the distance
        # to the references, which the frozen CNN computes; the pair shows how much of a
        # change in the first row the second explains.
        # planned once, so that every row scores the same references and test views
        options = EvalOptions(seed=args.seed)
        episodes = plan_episodes(index_dataset(data, categories=[class_dir.name]), options)
        figures = {
            key: evaluate(candidate, key, episodes, args.seed)
            for key, candidate in (
                ("before", model),
                ("after", tuned),
                ("before_alone", reconstruction_only(model)),
                ("after_alone", reconstruction_only(tuned)),
            )
        }
    before = figures["before"]
    headers = ["model", "scoring", *METRICS, "test images"]
    fine_tuned = f"generic + `train --init generic` ({summary.global_step} steps)"
    rows = [
        [name, scoring, *(figures[key][m] for m in METRICS), figures[key]["images"]]
        for key, name, scoring in (
            ("before", "generic (never saw the part)", "shipped"),
            ("after", fine_tuned, "shipped"),
            ("before_alone", "generic (never saw the part)", "reconstruction alone"),
            ("after_alone", fine_tuned, "reconstruction alone"),
        )
    ]
    table = markdown_table(headers, rows)
    note = (
        f"\n\n{part} at {size} px: fine-tuned on its {args.train_views} good training views "
        f"only ({args.epochs} cross-view epochs, lr {args.lr:g}, {seconds / 60:.1f} min); "
        f"every row scores the same 4-shot episodes of its {before['images']} test views. "
        "Shipped: the model's own fused settings; reconstruction alone: the same with the "
        "nearest-reference weights at 0."
    )
    print(table + note)
    print_json_line(
        "finetune_gain",
        {
            "part": part,
            "generic": str(generic),
            "steps": summary.global_step,
            "fine_tune_seconds": round(seconds, 1),
            **figures,
        },
    )
    if args.write_docs:
        update_docs_section("finetune-gain", table + note)


if __name__ == "__main__":
    main()
