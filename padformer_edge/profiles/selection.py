"""Choosing which good images become a profile's references.

A query can show the part from any side, and a method can only compare it with a
reference that saw the same surface. With more candidate images than reference slots,
the references should therefore cover as many viewpoints as possible: farthest-point
sampling in the profile's method's own feature space (``ScoringMethod.selection_features``:
PADFormer's pooled encoder features, or the comparator's pooled cells) picks each next
image as the one least like any already chosen.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.methods.interface import PadformerSource
from padformer_edge.methods.registry import method_for


def farthest_point_order(features: torch.Tensor, count: int) -> list[int]:
    """Indices of ``count`` rows of ``features`` chosen by farthest-point sampling.

    The first pick is the row nearest the mean (the most typical view, so a one-shot
    profile gets a representative image rather than an outlier); every later pick is the
    row whose distance to its nearest chosen row is largest. Ties go to the lower index,
    so the choice is deterministic.
    """
    if not 1 <= count <= features.shape[0]:
        raise ValueError(f"count must be in [1, {features.shape[0]}], got {count}")
    feats = features.double()
    first = int(torch.cdist(feats.mean(0, keepdim=True), feats)[0].argmin())
    chosen = [first]
    nearest = torch.cdist(feats[first : first + 1], feats)[0]
    while len(chosen) < count:
        pick = int(nearest.argmax())
        chosen.append(pick)
        nearest = torch.minimum(nearest, torch.cdist(feats[pick : pick + 1], feats)[0])
    return chosen


def select_references(
    images: Sequence[np.ndarray],
    shots: int,
    settings: DetectionSettings,
    padformer: PadformerSource,
) -> list[int]:
    """Indices (sorted) of the ``shots`` images that together cover the most viewpoints,
    in the features of the method that scores ``settings`` (``padformer`` loads the
    profile's model, for a method that reads it)."""
    if shots >= len(images):
        return list(range(len(images)))
    features = method_for(settings.metric).selection_features(images, settings, padformer)
    return sorted(farthest_point_order(features, shots))
