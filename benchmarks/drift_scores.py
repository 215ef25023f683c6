"""Scores for the drift benchmark from rendered views: good views as rendered, and the same
views with their brightness changed, each scored by a profile of the shipped model.

``benchmarks/drift.py --scores FILE`` then draws its streams from these scores instead of
a stated distribution. The profile's references are the first ``--references`` good
training views; every other good view of the class (training and test folders of the
render, all distinct viewpoints) is scored as rendered and with every pixel multiplied
by ``1 + --brightness`` (clipped to 255), the change a brighter lamp makes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.images import list_images, read_image
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import file_sha256, load_checkpoint
from padformer_edge.models import resolve_model


def brighter(image: np.ndarray, change: float) -> np.ndarray:
    """Every pixel times ``1 + change``, clipped to the 8-bit range."""
    return np.clip(image.astype(np.float32) * (1.0 + change), 0, 255).astype(np.uint8)


def score_all(detector: Detector, images: list[np.ndarray], batch: int = 8) -> list[float]:
    scores: list[float] = []
    for start in range(0, len(images), batch):
        scores += [d.score for d in detector.detect(images[start : start + batch])]
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--render", type=Path, required=True, help="A synth render folder.")
    parser.add_argument("--class", dest="class_", default="duck")
    parser.add_argument("--model", type=Path, default=None, help="Default: the shipped one.")
    parser.add_argument("--references", type=int, default=4)
    parser.add_argument("--brightness", type=float, default=0.2)
    parser.add_argument("--limit", type=int, default=None, help="Score only this many views.")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    folder = args.render / args.class_
    train = list_images(folder / "train" / "good")
    test = list_images(folder / "test" / "good")
    if len(train) <= args.references:
        raise SystemExit(f"error: {folder / 'train' / 'good'} holds too few good views; "
                         "give a synth render folder and a class it holds.")  # fmt: skip
    views = train[args.references :] + test
    views = views[: args.limit] if args.limit else views
    model_path = resolve_model(args.model)
    model, _ = load_checkpoint(model_path)
    try:
        detector = Detector(model, [read_image(p) for p in train[: args.references]],
                            DetectionSettings(device="cpu"))  # fmt: skip
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
