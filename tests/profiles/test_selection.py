"""Reference selection: farthest-point sampling covers the pose sphere better than first-N."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from padformer_edge.detect.images import read_image
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.model.padformer import build_model
from padformer_edge.profiles.selection import farthest_point_order, select_references
from tests.profiles.conftest import VIEWS, camera_directions


def mean_angle_to_nearest(chosen: list[np.ndarray], targets: list[np.ndarray]) -> float:
    """Mean over targets of the angle (degrees) to the nearest chosen camera direction."""
    cosines = np.clip(np.stack(targets) @ np.stack(chosen).T, -1.0, 1.0)
    return float(np.degrees(np.arccos(cosines.max(axis=1))).mean())


@pytest.mark.parametrize("metric", ["lab", "compare"])
@pytest.mark.parametrize("shots", [3, 6])
def test_selected_references_cover_query_poses_better_than_the_first_n(product, shots, metric):
    """In each method's own features: PADFormer's pooled encoder features with random
    weights (seed 0), which still follow the silhouette, and the comparator's pooled cells;
    the measure is over the held-out test views' poses."""
    directions = camera_directions(product)
    train = [f"train/good/{i}" for i in range(VIEWS.train)]
    queries = [d for key, d in directions.items() if key.startswith("test/")]
    torch.manual_seed(0)
    model = build_model("tiny").eval()
    images = [read_image(product / f"{key}.png") for key in train]
    settings = DetectionSettings(metric=metric)
    chosen = select_references(images, shots, settings, lambda: model)
    assert len(set(chosen)) == shots
    spread = mean_angle_to_nearest([directions[train[i]] for i in chosen], queries)
    first = mean_angle_to_nearest([directions[key] for key in train[:shots]], queries)
    assert spread < first


def test_farthest_point_order_starts_typical_then_goes_far():
    points = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [0.0, 3.0], [-0.2, 0.1]])
    assert farthest_point_order(points, 3) == [1, 2, 3]
    assert farthest_point_order(points, 1) == [1]


def test_selection_keeps_everything_when_there_are_few_images(product):
    torch.manual_seed(0)
    images = [read_image(product / "train" / "good" / f"{i}.png") for i in range(3)]
    def no_model():
        raise AssertionError("nothing to choose: no features are needed")

    assert select_references(images, 5, DetectionSettings(metric="auto"), no_model) == [0, 1, 2]
