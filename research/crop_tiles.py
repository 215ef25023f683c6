"""Reading the located part at more pixels: the crop read at k times the scorer's input,
in k x k tiles of that input, against references tiled alike (issue 63, step 3's
candidates), on framed validation renders with camera-pixel scratches.

A profile made with ``--background`` finds the part and squeezes its crop to the scorer's
input (320 px for the shipped comparator) whatever the part's size in camera pixels, so
on a 2448 x 2048 frame a 1-3 px scratch on a large part is a fraction of a pixel there.
For each --read K this reads the crop resized to K x 320 px as K x K tiles of 320 px, each
scored by the default score (compare) against every tile of every reference crop (the
bank holds K x K times the cells), the tiles' maps joined and pasted back into the
frame, the image's score the largest tile score. K = 1 is today's product reading.

Renders (or reuses, under --renders) framed validation datasets (`synth --frame`) of
--classes procedural objects of --seed (the validation seed 1; the test seeds are
refused) with the training kinds and the thin scratches of --thin-px (a transfer kind:
its validation render may serve a choice), on the belt background, light and colour
shifts, noise 2 and JPEG 95. Prints a table by defect kind and one JSON line;
--write-docs writes the `crop-tiles` block of docs/research.md.

    python research/crop_tiles.py --renders data/crop-tiles --read 1 --read 2 --read 3 \
        [--frame 2448x2048] [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.detection import Detection
from padformer_edge.detect.framed import Framing, framed_references, no_part
from padformer_edge.detect.images import read_image, resize_square, to_unit_tensor
from padformer_edge.detect.locate import BeltModel
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.weights import locate_generic_model
from padformer_edge_training.data.layouts import index_dataset
from padformer_edge_training.evaluation.protocol import (
    METRICS,
    EvalOptions,
    mean_of,
    plan_episodes,
    run_scorer,
    summarise,
)
from padformer_edge_training.evaluation.report import fmt
from padformer_edge_training.evaluation.scorers import PADFormerScorer, Scored
from padformer_edge_training.synth import ViewCounts, procedural_specs, render_dataset
from padformer_edge_training.synth.frames import FrameSpec, parse_frame_size

TEST_SEEDS = (0, 2, 3, 4, 5)  # docs/evaluation.md: the test renders', never used for a choice
INPUT = 320  # the shipped comparator's input side


def tiles(image: np.ndarray, read: int) -> list[np.ndarray]:
    """``image`` (a square crop) as ``read`` x ``read`` tiles of ``INPUT`` px, row by row:
    the crop itself for one tile (the scorer squeezes it, as the product does), else the
    crop resized to ``read`` x ``INPUT`` px by the product's own squeeze
    (``detect.images.resize_square``), rounded back to 8 bits, and cut."""
    if read == 1:
        return [image]
    side = read * INPUT
    unit = resize_square(to_unit_tensor(image, "cpu")[None], side)[0]
    resized = (unit.permute(1, 2, 0).numpy() * 255.0).round().astype(np.uint8)
    return [
        np.ascontiguousarray(resized[r * INPUT : (r + 1) * INPUT, c * INPUT : (c + 1) * INPUT])
        for r in range(read)
        for c in range(read)
    ]


class TiledScorer:
    """``PADFormerScorer`` (compare) behind a located crop read in ``read`` x ``read`` tiles."""

    def __init__(self, inner: PADFormerScorer, framing: Framing, read: int) -> None:
        self.inner, self.framing, self.read, self.name = inner, framing, read, inner.name
        self.no_part = 0

    def prepare(self, references: list) -> None:
        crops = framed_references(references, self.framing)
        self.inner.prepare([t for c in crops for t in tiles(c, self.read)])

    def _one(self, frame: np.ndarray) -> Detection:
        assert self.inner.detector is not None, "prepare() comes first"
        _, box, part = self.framing.part(frame)
        if box is None or part is None:
            self.no_part += 1
            return no_part(frame, 0.0)
        found = self.inner.detector.detect(tiles(part, self.read))
        if self.read == 1:  # the product's map, pasted as detect.framed pastes it
            joined = found[0].anomaly_map
        else:  # each tile's map at its 320 px, side by side
            maps = [frame_map(d.anomaly_map, (INPUT, INPUT)) for d in found]
            rows = [np.hstack(maps[r * self.read : (r + 1) * self.read]) for r in range(self.read)]
            joined = np.vstack(rows)
        pasted = frame_map(joined, frame.shape[:2], box)
        return Detection(max(d.score for d in found), pasted, [], [])

    def score(self, queries: list) -> list[Scored]:
        found = [self._one(frame) for frame in queries]
        return [Scored(-1.0 if d.no_part else d.score, d.anomaly_map, None) for d in found]


def render(args: argparse.Namespace, size: str) -> Path:
    """One framed validation render with the thin scratches (reused when there)."""
    width, height = parse_frame_size(size)
    low, high = (int(x) for x in args.thin_px.split("-"))
    spec = FrameSpec(width, height, part_scale=(0.15, 0.6), belt="belt", light=0.1, colour=6,
                     noise=2, jpeg=95, thin_px=(low, high))  # fmt: skip
    counts = ViewCounts(args.train_views, args.test_views_per_defect, args.good_test_views)
    out = args.renders / f"{size}-thin{args.thin_px}"
    print(f"rendering {out} ...", file=sys.stderr, flush=True)
    return render_dataset(procedural_specs(args.classes, args.seed), out, counts,
                          seed=args.seed, defects=["training"], frame=spec)  # fmt: skip


def by_kind(summary: dict) -> dict[str, dict]:
    """Each defect kind's figures (its frames against the good ones) averaged over the
    objects, and ``all`` (every defect against the good ones)."""
    classes = summary["classes"].values()
    kinds = sorted({kind for row in classes for kind in row["defects"]})
    found = {k: mean_of([r["defects"][k] for r in classes if k in r["defects"]]) for k in kinds}
    return {"all": summary["mean"], **found}


def run(args: argparse.Namespace) -> None:
    if args.seed in TEST_SEEDS:
        raise UserError(f"seed {args.seed} is a test render's; choose on validation (--seed 1).")
    model, _ = load_checkpoint(locate_generic_model())
    options = EvalOptions(shots=args.shots, seed=args.seed, max_per_label=args.max_per_label)
    settings = DetectionSettings(seed=args.seed, device="cpu", metric="compare")
    rows, results = [], []
    for size in args.frame or ["2448x2048"]:
        data = render(args, size)
        episodes = plan_episodes(index_dataset(data), options)
        belt = BeltModel.from_photo(read_image(data / "belt.png"))
        for read in args.read or [1, 2]:
            scorer = TiledScorer(PADFormerScorer(model, "compare", settings),
                                 Framing(belt, "validation"), read)  # fmt: skip
            scored, cpu = run_scorer(scorer, episodes, options)
            kinds = by_kind(summarise(scored, per_defect=True))
            for kind, figures in kinds.items():
                rows.append([size, f"{read} x {read} tiles of {INPUT} px" if read > 1
                             else f"squeezed to {INPUT} px (today)", kind,
                             *(fmt(figures[m]) for m in METRICS), f"{cpu:.3f}"])  # fmt: skip
                print(rows[-1], file=sys.stderr, flush=True)
            results.append({"frame": size, "read": read, "cpu_s": cpu,
                            "kinds": kinds, "no_part": scorer.no_part})  # fmt: skip
    table = markdown_table(
        ["frame", "crop read", "defect kind", "image AUROC", "pixel AUROC", "AUPRO",
         "CPU s / image"],
        rows,
    )  # fmt: skip
    note = (
        f"\n\nValidation render: {args.classes} procedural objects (seed {args.seed}), part "
        f"0.15-0.6 of the frame's shorter side on the belt background, light gain 1 +- 0.1, "
        f"colour shift +- 6 levels, noise 2, JPEG 95; the training kinds and camera-pixel "
        f"scratches {args.thin_px} px wide (`Scratches`); {args.good_test_views} good and "
        f"{args.test_views_per_defect} per kind test frames per object, {args.shots} random "
        f"references from its {args.train_views} training frames. The part located against "
        f"the render's belt photo (margin 0.2) in every row; each kind's row ranks its "
        f"defective frames against all good ones, mean over objects, in %. The default "
        f"score (compare) with the shipped comparator; CPU seconds per frame include "
        f"decoding, locating and every tile, one thread."
    )
    print(table + note)
    print_json_line("crop_tiles", {"seed": args.seed, "results": results})
    if args.write_docs:
        update_docs_section("crop-tiles", table + note)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=Path, required=True, help="folder of the renders")
    parser.add_argument("--frame", action="append", default=[], help="WIDTHxHEIGHT (repeat)")
    parser.add_argument("--read", action="append", type=int, default=[], help="tiles per side")
    parser.add_argument("--thin-px", default="1-3", help="scratch widths, LOW-HIGH camera px")
    parser.add_argument("--classes", type=int, default=6, help="procedural objects")
    parser.add_argument("--seed", type=int, default=1, help="the validation seed")
    parser.add_argument("--train-views", type=int, default=4)
    parser.add_argument("--good-test-views", type=int, default=6)
    parser.add_argument("--test-views-per-defect", type=int, default=2)
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--max-per-label", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
