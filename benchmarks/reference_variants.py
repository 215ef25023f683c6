"""How else could the nearest-reference distance be measured? One change at a time.

The ``fused`` image score is dominated by the nearest-reference distance (weight 192 in
both shipped models' scores, against reconstruction errors in units of their spread):
per stride-8 cell of the query, one minus the best cosine similarity of its standardised
frozen EfficientNet-Lite0 block-2 features to any cell of the references, also turned by
quarter turns. PatchCore, the baseline it trails on the test render, reads the same
network differently: 3x3 neighbourhood averages, Euclidean distance, a 448 px input. This
benchmark scores the distance alone (the map smoothed as the score's readout smooths it,
its maximum the image score) in the generic model's shipped form (1x input, smoothed; the
edge score now reads 1x and 2x, the "mean of 1x and 2x" variant) and in variants that
each change one thing, on the validation render, with the quality benchmark's protocol
and the paired bootstrap interval of each variant's image-AUROC difference to the
shipped form. It needs no reconstruction, so it costs seconds per variant, and it
decides nothing by itself: a variant that wins here would still have to join the
validation sweep (``tune_validation.py``) before any setting changes.

    python benchmarks/reference_variants.py --model padformer_edge/models/generic.safetensors \
        --data data/synth224-s1 --class duck --class lego --max-per-label 15 --write-docs
"""

from __future__ import annotations

import argparse
import dataclasses
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
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.reference_variants import (
    SIGMA,
    VARIANTS,
    CellDescriber,
    VariantScorer,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.uncertainty import image_auroc_margin

SECTION = "reference-variants"


def run(args: argparse.Namespace) -> None:
    model, _ = load_checkpoint(args.model)
    model.float().eval()
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    classes = list(args.class_) or None
    episodes = plan_episodes(index_dataset(args.data, categories=classes), options)
    describer = CellDescriber(model)
    scored = {
        v.name: run_scorer(VariantScorer(model, describer, v), episodes, options)[0]
        for v in VARIANTS
    }
    shipped = VARIANTS[0].name
    rows, payload = [], {}
    for v in VARIANTS:
        mean = summarise(scored[v.name], per_defect=False)["mean"]
        versus = (
            image_auroc_margin(scored[v.name], scored[shipped], seed=args.seed)
            if v.name != shipped
            else None
        )
        rows.append(
            [v.name, v.why, *(fmt(mean[m]) for m in METRICS), versus.brief() if versus else ""]
        )
        payload[v.name] = {**mean, "versus_shipped": dataclasses.asdict(versus) if versus else None}
        print(rows[-1], file=sys.stderr, flush=True)
    images = sum(len(e.tests) for e in episodes)
    objects = ", ".join(classes) if classes else "every object"
    summary = (
        f"The nearest-reference distance alone as the image score (smoothed by sigma "
        f"{SIGMA:g} model pixels, its maximum), {args.model.name}'s frozen features, on "
        f"{args.data.name} ({objects}; first {args.max_per_label} test images of every label, "
        f"{images} images), {args.shots}-shot, random references (seed {args.seed}); mean over "
        "objects, in %. Last column: image-AUROC points against the shipped form, with the "
        "95% paired bootstrap interval over the test images."
    )
    headers = ["distance", "what changes", "image AUROC", "pixel AUROC", "AUPRO", "vs shipped"]
    body = markdown_table(headers, rows) + "\n\n" + summary
    print(body)
    print_json_line("reference_variants", {"model": str(args.model), "variants": payload})
    if args.write_docs:
        update_docs_section(args.section, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, required=True, help="An edge or generic model.")
    parser.add_argument("--data", type=Path, required=True, help="The validation render.")
    add_episode_arguments(parser, SECTION)
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
