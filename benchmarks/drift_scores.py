"""Scores for the drift benchmark from rendered views: good views as rendered, and the same
views with their brightness changed, each scored by a profile of the shipped model.

``benchmarks/drift.py --scores FILE`` then draws its streams from these scores instead of
a stated distribution. The profile's references are the first ``--references`` good
training views; every other good view of the class (training and test folders of the
render, all distinct viewpoints) is scored as rendered and with every pixel multiplied
by ``1 + --brightness`` (clipped to 255), the change a brighter lamp makes.

With ``--statistics-only`` no model runs (nor loads torch): every good view of each
``--class`` gets the drift watch's image statistics (``padformer_edge.images.image_stats``, the
function the daemon and calibration call) as rendered and after each ``--brightness``
change, for ``benchmarks/drift.py --statistics FILE``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from padformer_edge.detect.images import list_images, read_image
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.images.image_stats import NAMES, image_statistics

if TYPE_CHECKING:  # torch: loaded only when scoring
    from padformer_edge.methods.padformer.detector import Detector


def brighter(image: np.ndarray, change: float) -> np.ndarray:
    """Every pixel times ``1 + change``, clipped to the 8-bit range."""
    return np.clip(image.astype(np.float32) * (1.0 + change), 0, 255).astype(np.uint8)


def score_all(detector: Detector, images: list[np.ndarray], batch: int = 8) -> list[float]:
    scores: list[float] = []
    for start in range(0, len(images), batch):
        scores += [d.score for d in detector.detect(images[start : start + batch])]
    return scores


def change_label(change: float) -> str:
    return f"{change:+.0%}"


def good_views(render: Path, name: str, skip: int = 0) -> list[Path]:
    """Every good view of class ``name`` (training then test folder) after the first
    ``skip`` training views (a profile's references)."""
    folder = render / name
    try:
        train = list_images(folder / "train" / "good")
        test = list_images(folder / "test" / "good")
    except UserError as err:
        raise SystemExit(f"error: {err}") from err
    if len(train) <= skip:
        raise SystemExit(f"error: {folder / 'train' / 'good'} holds too few good views; "
                         "give a synth render folder and a class it holds.")  # fmt: skip
    return train[skip:] + test


def frame_cost(images: list[np.ndarray], count: int = 20) -> float:
    """CPU ms of the statistics of a 5-megapixel frame (views scaled up to 2448 x 2048,
    a common line camera), the size the daemon's share of the cost is judged at."""
    import cv2

    frames = [cv2.resize(i, (2448, 2048), interpolation=cv2.INTER_LINEAR)
              for i in images[:count]]  # fmt: skip
    image_statistics(frames[0])  # the first call loads OpenCV's code paths
    started = time.process_time()
    for frame in frames:
        image_statistics(frame)
    return (time.process_time() - started) / len(frames) * 1e3


def statistics_only(args: argparse.Namespace) -> None:
    """Image statistics of every good view, as rendered and after each change: what the
    daemon's image drift test reads, with no model."""
    classes = {}
    started, images, alone = time.process_time(), 0, 0.0
    for name in args.class_:
        views = good_views(args.render, name)[: args.limit]
        rendered = [read_image(p) for p in views]
        before = time.process_time()
        rows = {"as rendered": [image_statistics(i) for i in rendered]}
        alone += time.process_time() - before
        for change in args.brightness:
            rows[change_label(change)] = [image_statistics(brighter(i, change)) for i in rendered]
        images += len(views) * len(rows)
        classes[name] = {"views": [str(p.relative_to(args.render)) for p in views],
                         "statistics": rows}  # fmt: skip
    cpu = time.process_time() - started
    views = sum(len(c["views"]) for c in classes.values())
    args.out.write_text(json.dumps({
        "render": str(args.render), "names": list(NAMES), "brightness": args.brightness,
        "classes": classes, "cpu_s": cpu, "images": images,
        "statistics_ms": alone / views * 1e3, "frame_ms": frame_cost(rendered),
        "view_size": f"{rendered[0].shape[1]} x {rendered[0].shape[0]}",
    }, separators=(",", ":")))  # fmt: skip
    print(f"measured {images} images ({len(classes)} classes) in {cpu:.1f} CPU s "
          f"(decoding included); wrote {args.out}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, required=True, help="A synth render folder.")
    parser.add_argument("--class", dest="class_", action="append", default=None,
                        help="Default: duck. Repeat for several (--statistics-only).")  # fmt: skip
    parser.add_argument("--model", type=Path, default=None, help="Default: the shipped one.")
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--brightness", type=float, action="append", default=None,
                        help="Default: 0.2. Repeat for several (--statistics-only).")  # fmt: skip
    parser.add_argument("--limit", type=int, default=None, help="Score only this many views.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--statistics-only", action="store_true",
                        help="Image statistics only: no model, no torch.")  # fmt: skip
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    args.class_ = args.class_ or ["duck"]
    args.brightness = args.brightness or [0.2]
    if args.statistics_only:
        statistics_only(args)
        return
    if len(args.class_) > 1 or len(args.brightness) > 1:
        raise SystemExit("error: scoring takes one --class and one --brightness; repeat them "
                         "with --statistics-only.")  # fmt: skip
    args.class_, args.brightness = args.class_[0], args.brightness[0]
    import torch

    from padformer_edge.methods.padformer.detector import Detector
    from padformer_edge.model.checkpoint import file_sha256, load_checkpoint
    from padformer_edge.weights import resolve_model

    torch.set_num_threads(args.threads)
    folder = args.render / args.class_
    train = list_images(folder / "train" / "good")
    views = good_views(args.render, args.class_, args.references)
    views = views[: args.limit] if args.limit else views
    model_path = resolve_model(args.model)
    model, _ = load_checkpoint(model_path)
    try:
        detector = Detector(model, [read_image(p) for p in train[: args.references]],
                            DetectionSettings(metric="auto", device="cpu"))  # fmt: skip
    except UserError as err:
        raise SystemExit(f"error: {err}") from err
    started = time.process_time()
    images = [read_image(p) for p in views]
    good = score_all(detector, images)
    shifted = score_all(detector, [brighter(i, args.brightness) for i in images])
    cpu = time.process_time() - started
    args.out.write_text(json.dumps({
        "render": str(args.render), "class": args.class_, "model_sha256": file_sha256(model_path),
        "references": args.references, "brightness": args.brightness,
        "views": [str(p.relative_to(args.render)) for p in views],
        "good": good, "shifted": shifted, "cpu_s": cpu,
    }, indent=1))  # fmt: skip
    print(f"scored {len(views)} views twice in {cpu:.0f} CPU s; wrote {args.out}")


if __name__ == "__main__":
    main()
