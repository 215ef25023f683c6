"""The spread of each error map on good views, so the ``fused`` metric can add them.

A LAB error is in squared colour units and a feature error in squared normalised
activations; their raw sums would let whichever has the larger numbers decide. Each is
therefore divided by its standard deviation over the pixels of good training views,
measured once after training with the detector itself (the same passes, masks and
resizing as on the line) and stored in the checkpoint's ``score_scales`` buffer.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import NamedTuple

import torch

from padformer_edge.detect.images import read_image, to_unit_tensor
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.padformer.detector import Detector
from padformer_edge.methods.padformer.paper_metrics import ColourMetric, PredictedFeatureMetric
from padformer_edge.model.padformer import SCORE_SCALE_NAMES, PADFormer

QUERIES_PER_CLASS = 4
PASSES = 5


class PassErrors(NamedTuple):
    """One image's per-pass ``[P, H, W]`` error maps by name, with what they were computed
    from, so a caller that needs the frozen features too does not run the CNN again."""

    maps: dict[str, torch.Tensor]
    query01: torch.Tensor
    """``[1, 3, H, W]`` the image in [0, 1] at its own size."""
    feature_target: torch.Tensor
    """``[1, M, F]`` the frozen CNN's features of the image at the model's size."""


@torch.inference_mode()
def pass_errors(detector: Detector, image) -> PassErrors:
    """Per-pass LAB and predicted-feature error maps of one RGB image."""
    query = to_unit_tensor(image, detector.device).unsqueeze(0)
    model_in = detector.fit(query)
    pixels, features = detector.reconstruct(model_in)
    size = (query.shape[-2], query.shape[-1])
    lab, feature = ColourMetric("lab"), PredictedFeatureMetric(detector.model)
    feature_target = feature.target(query, model_in)
    maps = {
        "lab": lab.errors(lab.target(query, model_in), pixels, size),
        "feature": feature.errors(feature_target, pixels, size, features, detector.pass_weights),
    }
    return PassErrors(maps, query, feature_target)


def measure_score_scales(
    model: PADFormer, good: dict[str, list[Path]], num_refs: int, seed: int
) -> dict[str, float]:
    """Measure and store (in ``model.score_scales``) each error map's spread over the
    pass-mean maps of a few good training views per class, each against ``num_refs``
    other good views of its class. Returns the scales by name."""
    rng = random.Random(seed)
    device = next(model.parameters()).device
    was_training = model.training
    pooled: dict[str, list[torch.Tensor]] = {name: [] for name in SCORE_SCALE_NAMES}
    for paths in good.values():
        picked = rng.sample(paths, min(len(paths), QUERIES_PER_CLASS + num_refs))
        queries, references = picked[:QUERIES_PER_CLASS], picked[QUERIES_PER_CLASS:]
        if len(references) < 1:
            continue
        settings = DetectionSettings(
            passes=PASSES, metric="lab", schedule="balanced", seed=seed, device=device.type
        )
        detector = Detector(model, [read_image(p) for p in references], settings)
        for path in queries:
            for name, maps in pass_errors(detector, read_image(path)).maps.items():
                pooled[name].append(maps.mean(dim=0).flatten())
    model.train(was_training)
    if not pooled["lab"]:
        raise ValueError("no class has enough good images to measure score scales.")
    scales = [float(torch.cat(pooled[name]).std().clamp_min(1e-12)) for name in SCORE_SCALE_NAMES]
    model.score_scales.copy_(torch.tensor(scales))
    return dict(zip(SCORE_SCALE_NAMES, scales, strict=True))


def rescale_checkpoint(
    path: Path,
    data_root: Path,
    num_refs: int = 4,
    seed: int = 0,
    changes: dict | None = None,
    out: Path | None = None,
) -> dict:
    """Measure the scales of an existing checkpoint on a dataset's good training views and
    write them into the file, or into ``out`` (for a run stopped before its end, new
    product data, or a scoring switch in ``changes`` that changes what the maps measure,
    such as ``score_masked_cells``)."""
    from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
    from padformer_edge_training.data.layouts import index_dataset

    model, metadata = load_checkpoint(path)
    if not model.config.cnn_tokens:
        raise ValueError(f"{path} has no CNN tokens; only edge checkpoints have score scales.")
    if changes:
        model = model.reconfigured(**changes).eval()
        metadata = {**metadata, "reconfigured_from": str(path), "changes": changes}
    scales = measure_score_scales(model, index_dataset(data_root).good_train(), num_refs, seed)
    save_checkpoint(out or path, model, metadata)
    return scales


def parse_change(text: str) -> tuple[str, object]:
    """'KEY=VALUE' with VALUE read as YAML (true, 0.9, blocks) -> (KEY, value)."""
    import yaml

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"expected KEY=VALUE, not {text!r}")
    return key, yaml.safe_load(value)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Measure and store an edge checkpoint's scales.")
    parser.add_argument("checkpoint", type=Path)
    parser.add_argument("data", type=Path, help="Dataset whose good training views to use.")
    parser.add_argument(
        "--set",
        dest="changes",
        type=parse_change,
        action="append",
        default=[],
        help="KEY=VALUE: a model setting that keeps the weights' shapes (repeat).",
    )
    parser.add_argument("--out", type=Path, help="Write a copy here instead of in place.")
    args = parser.parse_args()
    print(rescale_checkpoint(args.checkpoint, args.data, changes=dict(args.changes), out=args.out))
