"""Decoding a camera frame's JPEG at a reduced scale: what it saves, what it moves.

Issue 63 item 6 allows decoding a frame at 1/2, 1/4 or 1/8 of its size (libjpeg's
scaled IDCT, OpenCV's ``IMREAD_REDUCED_COLOR_*``) where the part's crop needs fewer
pixels than the frame has, on one condition: verdicts equal and scores within
``PARITY_RTOL`` of a full decode read at the same crop resolution. This script measures
both sides on a framed render (``synth --frame``, JPEG frames and its ``belt.png``):

- the CPU of one decode at each scale (median of ``--repeats``, one thread);
- for every test frame, the part found on the full decode (``detect.framed``'s box) and
  its crop cut from each decode, scored by the default score (``compare``) against
  references decoded and cropped at the same scale; the gap of each score to the full
  decode's, relative, over the frames whose crop at that scale still has at least the
  scorer's input side (the same read resolution: the crop is squeezed down to the input
  either way), and the image AUROC each scale gives.

Nothing in the product reads this; its table is the ``decode-scale`` block of
docs/research.md.

    python research/decode_scale.py --renders data/decode-val [--write-docs]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # CPU time must not count spinning

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import cv2
import numpy as np

from benchmarks.common import markdown_table, parse_and_run, print_json_line, update_docs_section
from padformer_edge.detect.framed import Framing
from padformer_edge.detect.framing import Box, crop, same_size
from padformer_edge.detect.locate import BeltModel
from padformer_edge.detect.parity import PARITY_RTOL
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.detector import CompareDetector
from padformer_edge_training.evaluation.metrics import image_auroc

SCALES = {1: cv2.IMREAD_COLOR, 2: cv2.IMREAD_REDUCED_COLOR_2,
          4: cv2.IMREAD_REDUCED_COLOR_4, 8: cv2.IMREAD_REDUCED_COLOR_8}  # fmt: skip
INPUT_SIDE = 320  # the default comparator's input: a crop with fewer pixels is enlarged


def decode(data: np.ndarray, scale: int) -> np.ndarray:
    """The RGB frame of JPEG bytes ``data`` decoded at 1/``scale`` of its size."""
    return cv2.cvtColor(cv2.imdecode(data, SCALES[scale]), cv2.COLOR_BGR2RGB)


def scaled_box(box: Box, scale: int) -> Box:
    """``box`` (full-frame pixels) on a frame decoded at 1/``scale``: libjpeg's reduced
    sizes are the full size divided and rounded up, so each corner is divided likewise."""
    return tuple(-(-v // scale) for v in box)  # type: ignore[return-value]


def relative_gaps(full: list[float], reduced: list[float]) -> list[float]:
    """Each reduced decode's score gap to the full decode's, relative to the latter."""
    return [abs(r - f) / abs(f) for f, r in zip(full, reduced, strict=True)]


def test_frames(root: Path, name: str) -> list[tuple[Path, bool]]:
    """(frame, is anomalous) of one class's test folders, in name order."""
    frames = sorted(p for p in (root / name / "test").glob("*/*") if p.suffix == ".jpg")
    if not frames:
        raise UserError(f"{root / name}/test holds no JPEG frames; render with synth --frame.")
    return [(p, p.parent.name != "good") for p in frames]


def decode_cpu(data: np.ndarray, scale: int, repeats: int) -> float:
    """Median CPU seconds of one decode of ``data`` at 1/``scale``."""
    spent = []
    for _ in range(repeats):
        start = time.process_time()
        decode(data, scale)
        spent.append(time.process_time() - start)
    return statistics.median(spent)


def score_class(root: Path, name: str, framing: Framing, scales: list[int], shots: int) -> dict:
    """One class: each scale's scores of its test frames, crop sides and labels."""
    reference_files = sorted((root / name / "train" / "good").glob("*"))[:shots]
    raw = [np.fromfile(p, np.uint8) for p in reference_files]
    boxes = [framing.cut(decode(data, 1))[1] for data in raw]
    detectors = {}
    for scale in scales:
        crops = [
            np.ascontiguousarray(crop(decode(data, scale), scaled_box(box, scale)))
            for data, box in zip(raw, boxes, strict=True)
            if box is not None
        ]
        detectors[scale] = CompareDetector(same_size(crops), DetectionSettings())
    found: dict = {"labels": [], "sides": [], "scores": {s: [] for s in scales}}
    for path, anomalous in test_frames(root, name):
        data = np.fromfile(path, np.uint8)
        _, box = framing.cut(decode(data, 1))
        if box is None:
            continue  # no part found: the product's "no part", scored at no scale
        found["labels"].append(anomalous)
        found["sides"].append(min(box[2] - box[0], box[3] - box[1]))
        for scale in scales:
            part = np.ascontiguousarray(crop(decode(data, scale), scaled_box(box, scale)))
            found["scores"][scale].append(detectors[scale].detect([part])[0].score)
    return found


def rows(results: dict[str, dict], scales: list[int], cpu: dict[int, float]) -> list[list]:
    """One row per scale: decode CPU, frames at the same read resolution, the relative
    score gaps there, and the image AUROC over every frame."""
    table = []
    for scale in scales:
        labels = [x for r in results.values() for x in r["labels"]]
        scores = [x for r in results.values() for x in r["scores"][scale]]
        same, gaps = 0, []
        for r in results.values():
            keep = [i for i, side in enumerate(r["sides"]) if side / scale >= INPUT_SIDE]
            same += len(keep)
            gaps += relative_gaps([r["scores"][1][i] for i in keep],
                                  [r["scores"][scale][i] for i in keep])  # fmt: skip
        table.append([
            f"1/{scale}" if scale > 1 else "full", round(cpu[scale] * 1000, 1), len(labels), same,
            f"{statistics.median(gaps):.1e}" if gaps else "-", f"{max(gaps):.1e}" if gaps else "-",
            round(100 * image_auroc(labels, scores), 1),
        ])  # fmt: skip
    return table


def run(args: argparse.Namespace) -> None:
    root = args.renders
    belt_photo = root / "belt.png"
    if not belt_photo.is_file():
        raise UserError(f"{root} has no belt.png; render it with synth --frame --belt belt.")
    belt = BeltModel.from_photo(cv2.cvtColor(cv2.imread(str(belt_photo)), cv2.COLOR_BGR2RGB))
    framing = Framing(belt, "belt.png")
    names = args.class_ or sorted(p.name for p in root.iterdir() if (p / "test").is_dir())
    scales = [1, *sorted(set(args.scale or [2, 4]))]
    results = {name: score_class(root, name, framing, scales, args.shots) for name in names}
    sample = np.fromfile(test_frames(root, names[0])[0][0], np.uint8)
    cpu = {scale: decode_cpu(sample, scale, args.repeats) for scale in scales}
    height, width = decode(sample, 1).shape[:2]
    headers = ["decode", "CPU ms", "frames", "frames at the same read resolution",
               "median relative score gap there", "largest gap there", "image AUROC"]  # fmt: skip
    table = markdown_table(headers, rows(results, scales, cpu))
    print(table)
    body = (
        f"{table}\n\n{width}x{height} JPEG frames of {', '.join(names)} ({root.name}), "
        f"{args.shots} references each, the default score (compare) with references "
        "decoded and cropped at the same scale as the frame; the part found on the full "
        "decode. A gap is the reduced decode's score against the full decode's, relative, "
        f"counted only where the crop keeps at least the scorer's {INPUT_SIDE}-px side. "
        f"The product's parity bound for such a change is {PARITY_RTOL:g}."
    )
    if args.write_docs:
        update_docs_section(args.section, body)
    print_json_line("decode_scale", {"cpu_ms": {s: cpu[s] * 1000 for s in scales},
                                     "rows": rows(results, scales, cpu)})  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--renders", type=Path, required=True, help="a framed JPEG render")
    parser.add_argument("--class", dest="class_", action="append", default=[])
    parser.add_argument("--scale", type=int, action="append", default=[], choices=(2, 4, 8))
    parser.add_argument("--shots", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--section", default="decode-scale")
    parser.add_argument("--write-docs", action="store_true")
    parse_and_run(parser, run)


if __name__ == "__main__":
    main()
