"""What a camera frame adds that costs the located crop its score, one thing at a time, and
how the frame's light is best matched to the belt photo's (issue 63, steps 2 and 3).

A profile made with ``--background`` finds the part and scores its crop. On the framed
validation renders that crop still ranks below the same parts rendered filling the image
(docs/research.md#framed-crop). This renders the same parts and views as frames that add
one thing after another: the part on a plain belt, the belt's texture, the light's gain
and colour shift per frame, then sensor noise and JPEG; each scored with the part located
(margin ``detect.framing.MARGIN``). On the renders with drifting light it also scores the
candidates for matching each crop's light to the photo's, all read from the frame's belt
(``Located.light``: the belt's mean colour per channel in the frame and in the photo at
the same pixels):

- ``none``: the crop as cut;
- ``shift``: the belt's colour difference added to every pixel;
- ``one gain``: the departure from the belt's colour divided by one gain for all
  channels (the mean of their ratios), added to the photo's belt colour
  (``detect.framing.relight``);
- ``gain per channel``: each channel scaled by its own ratio, photo over frame;
- ``one gain, belt painted out``: ``one gain``, then the belt around the part painted the
  photo's belt colour (``detect.framing.belt_out``, what the product does): the belt
  travels, so its texture around the part is never what the references showed.

On the render with the belt's texture and steady light the last is scored beside the
plain crop too.

The product's choice is the candidate with the best mean image AUROC over those renders.

Renders (or reuses, under --renders) --classes procedural objects of --seed (the
validation seed 1; the test seeds are refused) with the training kinds at --frame size,
and once unframed at 224 px for the figure framing has to reach. Prints a table and one
JSON line; --write-docs writes the `framed-light` block of docs/research.md.

    python research/framed_light.py --renders data/framed-light-12 [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from benchmarks.framed_quality import TEST_SEEDS, LocatedScorer
from padformer_edge.detect.framed import Framing
from padformer_edge.detect.framing import MARGIN, belt_out, crop, relight
from padformer_edge.detect.images import read_image
from padformer_edge.detect.locate import BeltModel, Located
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
from padformer_edge_training.evaluation.scorers import PADFormerScorer
from padformer_edge_training.synth import ViewCounts, procedural_specs, render_dataset
from padformer_edge_training.synth.frames import FrameSpec, parse_frame_size

ONE_GAIN = "one gain"
PRODUCT = "one gain, belt painted out"
CANDIDATES = ("none", "shift", ONE_GAIN, "gain per channel", PRODUCT)
# What each framed render adds, in order: (label, belt, light gain, colour shift, noise, JPEG)
FRAMES = (
    ("the part on a plain belt", "plain", 0.0, 0.0, 0.0, 0),
    ("+ the belt's texture", "belt", 0.0, 0.0, 0.0, 0),
    ("+ light gain 1 +- 0.1, colour shift +- 6 levels", "belt", 0.1, 6.0, 0.0, 0),
    ("+ noise 2 levels, JPEG 95", "belt", 0.1, 6.0, 2.0, 95),
)


def matched(pixels: np.ndarray, found: Located, candidate: str) -> np.ndarray:
    """``pixels`` (a crop of the frame ``found`` was located in) under the photo's light
    as ``candidate`` matches it from ``found.light``."""
    if candidate not in CANDIDATES:
        raise UserError(f"light candidate '{candidate}' is unknown; choose one of {CANDIDATES}.")
    if candidate == "none" or found.light is None:
        return pixels
    if candidate in (ONE_GAIN, PRODUCT):
        return relight(pixels, found.light)
    seen = np.asarray(found.light.seen, dtype=np.float32)
    photo = np.asarray(found.light.photo, dtype=np.float32)
    values = pixels.astype(np.float32)
    values = values + (photo - seen) if candidate == "shift" else values * (photo / seen)
    return np.clip(np.rint(values), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class CandidateFraming(Framing):
    """The product's framing with the crop's light matched by ``candidate``."""

    candidate: str = PRODUCT

    def part(
        self, frame: np.ndarray
    ) -> tuple[Located, tuple[int, int, int, int] | None, np.ndarray | None]:
        found, box = self.cut(frame)
        if box is None:
            return found, None, None
        part = matched(crop(frame, box), found, self.candidate)
        if self.candidate == PRODUCT and found.part_mask is not None:
            colour = self.belt.mean.reshape(-1, 3).mean(axis=0)
            part = belt_out(part, box, found.part_mask, frame.shape, colour)
        return found, box, part


def renders(args: argparse.Namespace) -> dict[str, Path]:
    """Label -> dataset: the unframed render, then each framed render of ``FRAMES``."""
    specs = procedural_specs(args.classes, args.seed)
    counts = ViewCounts(args.train_views, args.test_views_per_defect, args.good_test_views)
    common = {"seed": args.seed, "defects": ["training"]}
    found = {
        "part fills the image (224 px), not framed": render_dataset(
            specs, args.renders / "unframed-224", counts, size=224, **common
        )
    }
    width, height = parse_frame_size(args.frame)
    for index, (label, belt, light, colour, noise, jpeg) in enumerate(FRAMES):
        spec = FrameSpec(width, height, part_scale=(0.15, 0.6), belt=belt, light=light,
                         colour=colour, noise=noise, jpeg=jpeg)  # fmt: skip
        out = args.renders / f"{args.frame}-{index}"
        found[label] = render_dataset(specs, out, counts, frame=spec, **common)
    return found


def run(args: argparse.Namespace) -> None:
    if args.seed in TEST_SEEDS:
        raise UserError(f"seed {args.seed} is a test render's; choose on validation (--seed 1).")
    model, metadata = load_checkpoint(locate_generic_model())
    options = EvalOptions(shots=args.shots, seed=args.seed)
    rows, results = [], {}
    for label, data in renders(args).items():
        episodes = plan_episodes(index_dataset(data), options)
        framed = (data / "belt.png").is_file()
        lit = framed and label in (FRAMES[2][0], FRAMES[3][0])
        textured = framed and label == FRAMES[1][0]
        for candidate in CANDIDATES if lit else ("none", PRODUCT) if textured else ("none",):
            scorer = PADFormerScorer(
                model, "compare", DetectionSettings(seed=args.seed, device="cpu", metric="compare")
            )
            if framed:
                belt = BeltModel.from_photo(read_image(data / "belt.png"))
                framing = CandidateFraming(belt, "validation", MARGIN, candidate)
                scorer = LocatedScorer(scorer, framing)  # type: ignore[assignment]
            scored, cpu = run_scorer(scorer, episodes, options)
            mean = summarise(scored, per_defect=False)["mean"]
            shown = candidate if framed else "-"
            results.setdefault(label, {})[candidate] = {**mean, "cpu_s_per_image": cpu}
            rows.append([label, shown, *(fmt(mean[m]) for m in METRICS), f"{cpu:.3f}"])
            print(rows[-1], file=sys.stderr, flush=True)
    lit_rows = [results[FRAMES[2][0]], results[FRAMES[3][0]]]
    chosen = max(CANDIDATES, key=lambda c: sum(r[c]["image_auroc"] for r in lit_rows))
    table = markdown_table(
        ["render", "light matched", "image AUROC", "pixel AUROC", "AUPRO", "CPU s / image"],
        rows,
    )
    note = (
        f"\n\nValidation renders of {args.classes} procedural objects (seed {args.seed}), "
        f"the training defect kinds, {args.good_test_views} good and "
        f"{args.test_views_per_defect} per kind test images per object, {args.shots} random "
        f"references per object from its {args.train_views} training images; the same "
        f"parts and views in every render. Framed rows: {args.frame} frames, the part "
        f"0.15-0.6 of the shorter side, each row adding to the one above it; the part "
        f"located against the render's belt photo, its crop (margin {MARGIN:g}) scored and "
        f"the map pasted back, references cut and matched alike. The default score "
        f"(compare) with the shipped generic model (step {metadata.get('global_step')}) "
        f"and comparator; mean over objects, in %; CPU seconds per image on one thread. "
        f"Best on the two renders with drifting light (mean image AUROC): **{chosen}**."
    )
    print(table + note)
    print_json_line("framed_light", {"seed": args.seed, "chosen": chosen, "results": results})
    if args.write_docs:
        update_docs_section("framed-light", table + note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=Path, required=True, help="folder of the renders")
    parser.add_argument("--frame", default="1280x1024", help="WIDTHxHEIGHT of the frames")
    parser.add_argument("--classes", type=int, default=12, help="procedural objects")
    parser.add_argument("--seed", type=int, default=1, help="the validation seed")
    parser.add_argument("--train-views", type=int, default=4)
    parser.add_argument("--good-test-views", type=int, default=6)
    parser.add_argument("--test-views-per-defect", type=int, default=2)
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
