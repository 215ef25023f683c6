"""``python -m tests.line.make_fixture DIR``: a line site made where torch is installed.

A tiny random-weight edge model (the fused metric: LAB, predicted features and the
nearest-reference distance, so every part of the numpy scoring runs), a profile ``bolt``
on the onnxruntime runtime with its exported graphs and ``bolt-ov`` on the openvino
runtime with their IR (the same model and references), ``bolt-compare`` and
``bolt-compare-ov`` on the ``compare`` metric (the shipped comparator's graphs), each
with a threshold pinned between a good and a defective image's score, and those images
for the tests to drop into a camera folder; ``bolt-framed`` scores camera frames (a belt
photo, a region to ignore) with its JPEG frames. CI builds it in the main venv and hands it to
the torch-free venv's tests.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import cv2
import numpy as np

from tests.detect_images import product_image, with_defect

if TYPE_CHECKING:
    from padformer_edge.detect.settings import DetectionSettings

PROFILE = "bolt"
PROFILES = {"onnxruntime": PROFILE, "openvino": "bolt-ov"}
"""The site's profile on each line runtime."""
COMPARE_PROFILES = {"onnxruntime": "bolt-compare", "openvino": "bolt-compare-ov"}
"""The same references on the ``compare`` metric (the shipped comparator), per runtime."""
SETTINGS = {"passes": 3, "max_batch": 6, "device": "auto", "metric": "auto"}
FRAMED_PROFILE = "bolt-framed"
"""Camera frames of the belt: ``compare`` on onnxruntime with a belt photo and a region to
ignore, its queries JPEG frames (a part, the part with a dent, the belt alone)."""


def write_image(path: Path, image: np.ndarray) -> Path:
    ok, data = cv2.imencode(path.suffix, cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
    assert ok
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.tobytes())
    return path


def make_site(root: Path) -> Path:
    """Write the site under ``root``; returns ``root``. ``site.json`` lists the query
    images with the torch detector's score of each, for the tests to compare with."""
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.model.checkpoint import save_checkpoint
    from padformer_edge.profiles.calibrate import pin_threshold
    from padformer_edge.profiles.create import create_profile
    from tests.deploy.parity import tiny_model

    root.mkdir(parents=True, exist_ok=True)
    save_checkpoint(root / "model.safetensors", tiny_model("edge"))
    for seed in range(3):
        write_image(root / f"references/{seed}.png", product_image(72, 96, seed))
    good = product_image(72, 96, seed=21)
    images = {
        "good.png": good,
        "defect.png": with_defect(good, (20, 30, 24, 24)),
        "other.jpg": product_image(144, 192, seed=22),
    }
    for name, image in images.items():
        write_image(root / "queries" / name, image)
    settings = DetectionSettings(**SETTINGS, runtime="onnxruntime")
    profiles = root / "state" / "profiles"
    made = {
        name: create_profile(
            profiles,
            name,
            root / "model.safetensors",
            root / "references",
            settings=settings.replace(runtime=runtime),
        ).profile
        for runtime, name in PROFILES.items()
    }
    profile = made[PROFILE]
    from padformer_edge.detect.images import read_image
    from padformer_edge.methods.compare.detector import CompareDetector
    from padformer_edge.methods.padformer.detector import Detector
    from padformer_edge.model.checkpoint import load_checkpoint

    model, _ = load_checkpoint(root / "model.safetensors")
    references = [read_image(p) for p in profile.reference_paths]
    by_torch = Detector(model, references, settings.replace(runtime="torch"))
    queries = sorted((root / "queries").iterdir())
    scores = {p.name: by_torch.detect([read_image(p)])[0].score for p in queries}
    threshold = (scores["good.png"] + scores["defect.png"]) / 2
    for each in made.values():
        pin_threshold(each, threshold)
    compared = {
        name: create_profile(
            profiles,
            name,
            root / "model.safetensors",
            root / "references",
            settings=settings.replace(runtime=runtime, metric="compare"),
        ).profile
        for runtime, name in COMPARE_PROFILES.items()
    }
    by_comparator = CompareDetector(references, settings.replace(runtime="torch", metric="compare"))
    compare_scores = {p.name: by_comparator.detect([read_image(p)])[0].score for p in queries}
    compare_threshold = (compare_scores["good.png"] + compare_scores["defect.png"]) / 2
    for each in compared.values():
        pin_threshold(each, compare_threshold)
    framed_scores, framed_threshold = make_framed(root, profiles, settings)
    record = {
        "framed_profile": FRAMED_PROFILE,
        "framed_scores": framed_scores,
        "framed_threshold": framed_threshold,
        "profiles": PROFILES,
        "threshold": threshold,
        "torch_scores": scores,
        "compare_profiles": COMPARE_PROFILES,
        "compare_threshold": compare_threshold,
        "compare_scores": compare_scores,
    }
    (root / "site.json").write_text(json.dumps(record, indent=2))
    return root


def make_framed(
    root: Path, profiles: Path, settings: DetectionSettings
) -> tuple[dict[str, float | None], float]:
    """``FRAMED_PROFILE`` and its frames; each frame's score by the same profile run with
    torch (None: no part), and the threshold pinned between the good and the dented part."""
    from padformer_edge.detect.images import read_image
    from padformer_edge.profiles.calibrate import pin_threshold
    from padformer_edge.profiles.create import create_profile
    from padformer_edge.profiles.schema import IgnoreRegion
    from tests import framed_frames

    for index, frame in enumerate(framed_frames.references()):
        write_image(root / f"framed-references/{index}.png", frame)
    belt = write_image(root / "belt.png", framed_frames.belt_photo())
    frames = {
        "good.jpg": framed_frames.framed(110, 70, seed=5)[0],
        "dent.jpg": framed_frames.framed(110, 70, seed=5, dent=True)[0],
        "empty.jpg": framed_frames.empty(7),
    }
    for name, frame in frames.items():
        write_image(root / "framed-queries" / name, frame)
    stamp = IgnoreRegion(name="stamp", points=[(0, 0), (60, 0), (60, 40), (0, 40)])
    line = create_profile(
        profiles,
        FRAMED_PROFILE,
        None,
        root / "framed-references",
        settings=settings.replace(runtime="onnxruntime", metric="compare"),
        background=belt,
        ignore_regions=[stamp],
    ).profile
    by_torch = line.on_runtime("torch").build_detector(calibrating=True)
    scores: dict[str, float | None] = {}
    for name in frames:
        found = by_torch.detect([read_image(root / "framed-queries" / name)])[0]
        scores[name] = None if found.no_part else found.score
    threshold = (scores["good.jpg"] + scores["dent.jpg"]) / 2  # type: ignore[operator]
    pin_threshold(line, threshold)
    return scores, threshold


if __name__ == "__main__":
    make_site(Path(sys.argv[1]))
