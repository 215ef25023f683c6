"""What framing costs today's score: the learned comparison (`compare`) and the distance
alone on the same parts and views, rendered as the part filling the image and as camera
frames in which the part covers 0.15-0.6 of the shorter side, on a validation render.

Today every image is squeezed whole to the model's input, so in a frame the part is read
at a fraction of its pixels and most cells are belt. This table measures that loss with
`synth --frame` renders; it is the baseline that finding the part and reading it at its
own resolution must recover.

Renders (or reuses, under --renders) the --classes procedural objects of --seed (the
validation seed 1; the test seeds 0 and 2-5 are refused) with the training defect kinds:
once unframed at --size px and once framed at each --frame size on a belt with per-frame
light and colour shifts, noise 2 and JPEG 95. The views and the default kinds' defects are
the same in every render (the class's stream draws them); the newer kinds' smallest draws
are floored at a few pixels of each render's own size. Each render is scored with the
shipped generic model and comparator, --shots random references per class. Prints a table
and one JSON line; --write-docs writes the table into the `framed-quality` block.

With --locate MARGIN (repeat for several) each framed render is scored by the default
score (compare) a second way, as a profile made with `profile create --background` scores
it (`detect.framed`): the part is found against the render's empty-belt photo
(`belt.png`), its square crop with MARGIN of its longer side on each side is scored,
references are cropped the same way, and the map is pasted back into the frame (so pixel
AUROC and AUPRO count the belt again). The margin with the best mean image AUROC over
the framed renders is written into the `framed-quality-choice` block.

    python benchmarks/framed_quality.py --renders data/framed-quality \
        [--locate 0.05 --locate 0.1 --locate 0.2] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.framed import FramedDetector, Framing, framed_references
from padformer_edge.detect.framing import MARGIN
from padformer_edge.detect.images import read_image
from padformer_edge.detect.locate import BeltModel
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.weights import locate_generic_model
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.scorers import PADFormerScorer, Scored
from padformer_edge_training.synth import ViewCounts, procedural_specs, render_dataset
from padformer_edge_training.synth.frames import FrameSpec, parse_frame_size

TEST_SEEDS = (0, 2, 3, 4, 5)  # docs/evaluation.md: the test renders', never used for a choice
ROWS = {"compare": "learned comparison (compare)", "distance": "distance alone"}


class LocatedScorer:
    """``PADFormerScorer`` behind a framed profile's reading: locate, crop, paste back.
    ``no_part`` counts the test frames in which no part was found; they score below
    every other (a line records them as "no part", never as an anomaly)."""

    def __init__(self, inner: PADFormerScorer, framing: Framing) -> None:
        self.inner, self.framing, self.name, self.no_part = inner, framing, inner.name, 0

    def prepare(self, references: list) -> None:
        self.inner.prepare(framed_references(references, self.framing))

    def score(self, queries: list) -> list[Scored]:
        assert self.inner.detector is not None, "prepare() comes first"
        detector = FramedDetector(self.inner.detector, self.framing)
        found = [d for _, _, d in detector.detect_each(queries, reconstruction=True)]
        self.no_part += sum(d.no_part for d in found)
        return [
            Scored(-1.0 if d.no_part else d.score, d.anomaly_map, d.reconstruction) for d in found
        ]


def margin_choice(results: dict[str, dict[str, dict]], margins: list[float]) -> str:
    """The crop margin with the highest image AUROC of the learned comparison averaged
    over the framed renders (the smaller on a tie), in words with every row it beat and
    the same renders' whole-frame and unframed figures beside it."""

    def key(margin: float) -> str:
        return f"compare located {margin:g}"

    framed = {label: rows for label, rows in results.items() if key(margins[0]) in rows}
    unframed = next(rows["compare"] for label, rows in results.items() if label not in framed)

    def mean(margin: float) -> float:
        return sum(rows[key(margin)]["image_auroc"] for rows in framed.values()) / len(framed)

    chosen = max(sorted(margins), key=lambda m: (round(mean(m), 6), -m))
    lines = [
        f"Chosen crop margin: **{chosen:g}** of the part's longer side on each side "
        f"(the product's `detect.framing.MARGIN` is {MARGIN:g}), the highest image AUROC "
        f"of the learned comparison over the framed validation renders "
        f"({100 * mean(chosen):.1f} on average; "
        + ", ".join(f"margin {m:g}: {100 * mean(m):.1f}" for m in sorted(margins) if m != chosen)
        + ").",
        "",
    ]
    for label, rows in framed.items():
        located = rows[key(chosen)]
        lines.append(
            f"- {label}: image AUROC {100 * located['image_auroc']:.1f} with the part located "
            f"and cropped, {100 * rows['compare']['image_auroc']:.1f} with the whole frame "
            f"squeezed, against {100 * unframed['image_auroc']:.1f} for the same parts "
            f"unframed; {located['no_part']} of {located['images']} frames without a part "
            f"found; {located['cpu_s_per_image']:.3f} CPU s per frame, against "
            f"{rows['compare']['cpu_s_per_image']:.3f} for the whole frame."
        )
    return "\n".join(lines)


def renders(args: argparse.Namespace) -> dict[str, Path]:
    """Label -> dataset: the unframed render, then one framed render per --frame size."""
    specs = procedural_specs(args.classes, args.seed)
    counts = ViewCounts(args.train_views, args.test_views_per_defect, args.good_test_views)
    common = {"seed": args.seed, "defects": ["training"]}
    found = {
        f"part fills the image ({args.size} px)": render_dataset(
            specs, args.renders / f"unframed-{args.size}", counts, size=args.size, **common
        )
    }
    for size in args.frame or ["1280x1024", "2448x2048"]:
        width, height = parse_frame_size(size)
        spec = FrameSpec(width, height, part_scale=(0.15, 0.6), belt="belt", light=0.1,
                         colour=6, noise=2, jpeg=95)  # fmt: skip
        out = args.renders / f"{size}-belt"
        label = f"{size} frame, part 0.15-0.6 of its shorter side"
        found[label] = render_dataset(specs, out, counts, frame=spec, **common)
    return found


def run(args: argparse.Namespace) -> None:
    args.metric = args.metric or list(ROWS)
    if args.seed in TEST_SEEDS:
        raise UserError(f"seed {args.seed} is a test render's; choose on validation (--seed 1).")
    model, metadata = load_checkpoint(locate_generic_model())
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    results: dict[str, dict[str, dict]] = {}
    rows = []
    for data_label, data in renders(args).items():
        episodes = plan_episodes(index_dataset(data), options)
        images = sum(len(e.tests) for e in episodes)
        framed = (data / "belt.png").is_file()
        for metric, row in ROWS.items():
            if metric not in args.metric:
                continue
            settings = DetectionSettings(seed=args.seed, device="cpu", metric=metric)
            ways = [(row, None)] + [
                (f"{row}, part located, crop margin {m:g}", m)
                for m in args.locate
                if framed and metric == "compare"
            ]
            for label, margin in ways:
                scorer = PADFormerScorer(model, row, settings)
                if margin is not None:
                    belt = BeltModel.from_photo(read_image(data / "belt.png"))
                    scorer = LocatedScorer(scorer, Framing(belt, "validation", margin))
                scored, cpu = run_scorer(scorer, episodes, options)
                mean = summarise(scored, per_defect=False)["mean"]
                missed = getattr(scorer, "no_part", 0)
                key = metric if margin is None else f"{metric} located {margin:g}"
                results.setdefault(data_label, {})[key] = {
                    **mean,
                    "cpu_s_per_image": cpu,
                    "no_part": missed,
                }
                rows.append([data_label, label, images, missed,
                             *(fmt(mean[m]) for m in METRICS), f"{cpu:.3f}"])  # fmt: skip
                print(rows[-1], file=sys.stderr, flush=True)
    table = markdown_table(
        [
            "render",
            "score",
            "images",
            "no part found",
            "image AUROC",
            "pixel AUROC",
            "AUPRO",
            "CPU s / image",
        ],
        rows,
    )
    note = (
        f"\n\nValidation renders of {args.classes} procedural objects (seed {args.seed}), the "
        f"training defect kinds, {args.good_test_views} good and {args.test_views_per_defect} "
        f"per kind test images per object, {args.shots} random references per object from "
        f"its {args.train_views} training images (the same render's, so framed references "
        f"are frames too); mean over objects, in %. Framed renders: belt background, light "
        f"gain 1 +- 0.1, colour shift +- 6 levels, noise 2 levels, JPEG 95. The shipped "
        f"generic model (step {metadata.get('global_step')}) and comparator; CPU seconds "
        f"per image include decoding the frame, on one thread. A frame's pixel AUROC and "
        f"AUPRO count every belt pixel as a normal one, so they are not comparable with the "
        f"unframed rows'; the image AUROC is. Rows 'part located': the part found against "
        f"the render's empty-belt photo and its square crop (that margin of its longer side "
        f"on each side) scored, references cropped alike, the map pasted back into the "
        f"frame (`detect.framed`, what a profile made with `--background` runs); CPU "
        f"seconds include locating; a frame with no part found scores below every other."
    )
    print(table + note)
    print_json_line("framed_quality", {"seed": args.seed, "results": results})
    choice = margin_choice(results, args.locate) if args.locate else None
    if choice is not None:
        print(choice)
    if args.write_docs:
        update_docs_section("framed-quality", table + note)
        if choice is not None:
            update_docs_section("framed-quality-choice", choice)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=Path, required=True, help="folder of the renders")
    parser.add_argument("--frame", action="append", default=[], help="WIDTHxHEIGHT (repeat)")
    parser.add_argument("--size", type=int, default=224, help="the unframed render's side")
    parser.add_argument("--classes", type=int, default=6, help="procedural objects")
    parser.add_argument("--seed", type=int, default=1, help="the validation seed")
    parser.add_argument("--train-views", type=int, default=4)
    parser.add_argument("--good-test-views", type=int, default=6)
    parser.add_argument("--test-views-per-defect", type=int, default=2)
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=None)
    parser.add_argument(
        "--locate",
        action="append",
        type=float,
        default=[],
        help="also score the located part's crop with this margin (repeat)",
    )
    parser.add_argument(
        "--metric",
        action="append",
        choices=list(ROWS),
        default=None,
        help="score these rows only (repeat; default both)",
    )
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
