"""Mask schedules: hide counts, coverage and reproducibility."""

import pytest
import torch

from padformer_edge.detect.masks import make_masks
from padformer_edge.errors import UserError


@pytest.mark.parametrize(("passes", "patches", "ratio"), [(8, 64, 0.25), (15, 196, 0.4)])
def test_balanced_hides_every_patch_equally_often(passes, patches, ratio):
    masks = make_masks("balanced", passes, patches, ratio, seed=5)
    per_pass = int(patches * ratio)
    assert masks.shape == (passes, patches)
    assert (masks.sum(dim=1) == per_pass).all()
    counts = masks.sum(dim=0)
    if passes * per_pass % patches == 0:
        assert (counts == passes * per_pass // patches).all()
    else:
        assert counts.max() - counts.min() == 1
    assert counts.min() >= 1  # every patch is reconstructed from references at least once


def test_random_schedule_is_reproducible_from_its_seed():
    first = make_masks("random", 15, 64, 0.4, seed=11)
    assert torch.equal(first, make_masks("random", 15, 64, 0.4, seed=11))
    assert not torch.equal(first, make_masks("random", 15, 64, 0.4, seed=12))
    assert (first.sum(dim=1) == 25).all()
    assert len({tuple(row.tolist()) for row in first}) == 15


def test_balanced_schedule_is_reproducible_and_seed_dependent():
    first = make_masks("balanced", 15, 64, 0.4, seed=2)
    assert torch.equal(first, make_masks("balanced", 15, 64, 0.4, seed=2))
    assert not torch.equal(first, make_masks("balanced", 15, 64, 0.4, seed=3))


@pytest.mark.parametrize(
    ("schedule", "passes", "ratio", "phrase"),
    [
        ("spiral", 15, 0.4, "unknown"),
        ("random", 1, 0.4, "at least 2"),
        ("random", 15, 1.0, "outside"),
    ],
)
def test_bad_schedule_settings_are_user_errors(schedule, passes, ratio, phrase):
    with pytest.raises(UserError, match=phrase):
        make_masks(schedule, passes, 64, ratio, seed=0)
