"""The comparator against the distance alone, on a render's objects (validation first).

Scores each ``--model`` comparator checkpoint (repeat: the kept snapshots of one run, to
choose the step on validation) with the evaluation protocol, beside the distance alone
read from the same cells (the correction left out), the distance alone at each
``--distance-size`` (the input size is chosen on validation, not inherited) and, with
``--generic``, the shipped generic model's distance alone and fused score, at ``--shots``
references. ``--label`` keeps
only the test images of those defect kinds (and the good ones): the training families
on a validation render, the held-out families once, on the test renders.

Prints a table and one JSON line; ``--write-docs`` fills the docs block ``--section``.

    python research/comparator_validation.py --model runs/comparator/step-001200.safetensors \
        --data data/synth224-s1 --class duck --class lego --shots 4 --write-docs
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
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.compare.checkpoint import load_comparator
from padformer_edge.methods.compare.model import ComparatorConfig, ComparisonModel
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.comparator_scorer import ComparatorScorer
from padformer_edge_training.evaluation.protocol import (
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.scorers import PADFormerScorer

METRICS = ("image_auroc", "pixel_auroc", "aupro")


def scorers(args: argparse.Namespace) -> list[tuple[str, object]]:
    """(label, scorer) in table order."""
    rows: list[tuple[str, object]] = []
    for path in args.model:
        model, metadata = load_comparator(path)
        name = f"comparator {path.parent.name}/{path.stem} (step {metadata.get('step')})"
        rows.append((name, ComparatorScorer(model, name)))
    model, _ = load_comparator(args.model[0])
    rows.append(
        (
            f"distance alone, same cells ({model.config.input_size} px)",
            ComparatorScorer(model, "distance", correction=False),
        )
    )
    for size in args.distance_size:
        fresh = ComparisonModel(ComparatorConfig(input_size=size, aligned_k=0, use_stn=False))
        fresh.features.load_imagenet()
        label = f"distance alone, {size} px"
        rows.append((label, ComparatorScorer(fresh, label, correction=False)))
    if args.generic:
        from padformer_edge.model.checkpoint import load_checkpoint
        from padformer_edge.weights import generic_checkpoint_path

        generic, _ = load_checkpoint(generic_checkpoint_path())
        base = DetectionSettings(metric="auto", seed=0, device="cpu")
        rows.append(
            (
                "shipped model: distance alone",
                PADFormerScorer(generic, "d", base.replace(metric="distance")),
            )
        )
        rows.append(("shipped model: fused score", PADFormerScorer(generic, "f", base)))
    return rows


def run(args: argparse.Namespace) -> None:
    index = index_dataset(args.data, categories=args.class_ or None)
    if args.label:
        keep = {*args.label, "good"}
        index.records = [r for r in index.records if r.split == "train" or r.label in keep]
    results: dict[str, dict] = {}
    table_rows = []
    for shots in [args.shots]:
        options = EvalOptions(shots=shots, seed=args.seed, max_per_label=args.max_per_label)
        episodes = plan_episodes(index, options)
        for label, scorer in scorers(args):
            scored, cpu = run_scorer(scorer, episodes, options)  # type: ignore[arg-type]
            mean = summarise(scored, per_defect=False)["mean"]
            row = {**{m: mean[m] for m in METRICS}, "cpu_s_per_image": round(cpu, 4)}
            results[f"{shots}-shot {label}"] = row
            table_rows.append([shots, label, *(fmt(row[m]) for m in METRICS), f"{cpu:.3f}"])
            print(f"{shots}-shot {label}: {row}", file=sys.stderr, flush=True)
    table = markdown_table(
        ["refs", "score", "image AUROC", "pixel AUROC", "AUPRO", "CPU s / image"], table_rows
    )
    images = sum(
        len(e.tests) for e in plan_episodes(index, EvalOptions(max_per_label=args.max_per_label))
    )
    labels = ", ".join(sorted({r.label for r in index.records if r.split == "test"}))
    classes = ", ".join(sorted({r.category for r in index.records}))
    body = f"{images} test images of {classes} in {args.data.name} ({labels}).\n\n{table}"
    print(body)
    print_json_line(
        "comparator_validation", {"models": [str(m) for m in args.model], "rows": results}
    )
    if args.write_docs:
        update_docs_section(args.section, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, action="append", required=True)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--label", action="append", default=[], help="defect kinds kept")
    parser.add_argument("--generic", action="store_true", help="add the shipped model's rows")
    parser.add_argument(
        "--distance-size",
        type=int,
        action="append",
        default=[],
        help="add the distance alone read at this input size (repeat): the size is a choice",
    )
    add_episode_arguments(parser, "comparator-validation", max_per_label=15)
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
