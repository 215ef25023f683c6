"""The comparator's image term: the maximum by default, the mean of the top k cells when
asked, so that a defect of a few cells carries the image."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from padformer_edge_training.comparator.loss import (
    comparator_loss,
    dice_loss,
    focal_loss,
    image_logits,
    image_loss,
)


def random_batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    logits = torch.randn(4, 6, 6, generator=generator) * 3
    targets = torch.zeros(4, 6, 6)
    targets[1, 2:4, 1:3] = 0.7
    targets[3, 5, 5] = 0.2
    return logits, targets


def test_k_1_is_the_image_term_of_the_maximum_bit_for_bit():
    logits, targets = random_batch()
    labels = (targets.flatten(1).amax(1) > 0).float()
    maximum = F.binary_cross_entropy_with_logits(logits.flatten(1).amax(1), labels)
    assert torch.equal(image_loss(logits, targets), maximum)
    assert torch.equal(image_loss(logits, targets, top_k=1), maximum)
    total = focal_loss(logits, targets) * 10.0 + dice_loss(logits, targets) + 2.0 * maximum
    assert torch.equal(comparator_loss(logits, targets, 2.0)["loss"], total)
    assert torch.equal(comparator_loss(logits, targets, 2.0, image_top_k=1)["loss"], total)


def test_k_above_1_is_the_mean_of_the_largest_cells():
    logits, targets = random_batch(1)
    ranked = logits.flatten(1).sort(1, descending=True).values
    assert torch.equal(image_logits(logits, 3), ranked[:, :3].mean(1))
    assert not torch.equal(image_loss(logits, targets, 3), image_loss(logits, targets))
    # more than the grid's cells: all of them
    assert torch.equal(image_logits(logits, 10_000), ranked.mean(1))


def test_a_two_cell_defect_outvotes_one_stray_cell_and_both_its_cells_learn():
    logits = torch.full((2, 8, 8), -4.0)
    logits[0, 3, 3] = 4.0  # a good image with one stray cell
    logits[1, 5, 5], logits[1, 5, 6] = 4.0, 3.0  # a defect of two cells
    maximum, two = image_logits(logits, 1), image_logits(logits, 2)
    assert maximum[0] == maximum[1], "the maximum cannot tell them apart"
    assert two[1] > two[0] + 3.0, "two cells carry the defect, one stray cell does not"

    targets = torch.zeros(2, 8, 8)
    targets[1, 5, 5:7] = 1.0
    for k, learning in ((1, 1), (2, 2)):
        cells = logits.clone().requires_grad_(True)
        image_loss(cells, targets, top_k=k).backward()
        assert int((cells.grad[1] != 0).sum()) == learning
        assert cells.grad[1, 5, 5] < 0  # raised: the defect's image is pushed up
