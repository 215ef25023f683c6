"""The reconstruction-fit measurements: how well a model rebuilds hidden patches of views
it trained on against good views of the same objects it never saw.

``sample_images`` draws (seeded) train and held-out good views with four references
each, always from the training views and never the image itself; ``masked_error`` is the
mean squared RGB error over the masked patches of the Detector's passes only, because
visible patches can be copied from the query. ``benchmarks/recon_fit.py`` runs them on
checkpoints and writes the docs table.
"""

from __future__ import annotations

import random
from pathlib import Path

import torch

from padformer_edge.detect.detector import Detector
from padformer_edge.detect.images import read_image
from padformer_edge_training.data.layouts import index_dataset


def sample_images(data: Path, per_class: int, seed: int) -> list[tuple[str, Path, list[Path]]]:
    """(split, image, its 4 references) for ``per_class`` train and held-out good views."""
    index = index_dataset(data)
    rng = random.Random(seed)
    chosen = []
    for category, train in index.good_train().items():
        held_out = [
            r.path
            for r in index.records
            if r.category == category and r.split == "test" and r.is_good
        ]
        for split, pool in (("train", train), ("held-out", held_out)):
            for image in rng.sample(pool, min(per_class, len(pool))):
                references = rng.sample([p for p in train if p != image], 4)
                chosen.append((split, image, references))
    return chosen


@torch.inference_mode()
def masked_error(detector: Detector, image: Path) -> float:
    """Mean squared [0, 1] RGB error over the masked patches of all passes."""
    query = detector.to_model_input(read_image(image)).unsqueeze(0)
    recon, _ = detector.reconstruct(query)  # [P, 3, S, S] in [0, 1]
    target = detector.model.denormalize(query).clamp(0.0, 1.0)
    p, g = detector.model.config.patch_size, detector.model.config.grid_size
    masked = detector.masks.view(-1, 1, g, g).repeat_interleave(p, 2).repeat_interleave(p, 3)
    squared = (recon - target).square() * masked
    return float(squared.sum() / (masked.sum() * 3))
