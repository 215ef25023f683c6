"""Within-view references: geometric variants that keep the query's content."""

from __future__ import annotations

import torch

from padformer_edge_training.augment import WithinViewAugment
from tests.train_helpers import object_image


def _as_tensor(seed: int) -> torch.Tensor:
    image = object_image(seed, 64)[:, :, ::-1].copy()
    return torch.from_numpy(image).permute(2, 0, 1).float() / 255


def _correlation(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.flatten() - a.mean(), b.flatten() - b.mean()
    return float((a @ b) / (a.norm() * b.norm()))


def test_references_differ_from_the_query_but_keep_its_content() -> None:
    query, unrelated = _as_tensor(3), _as_tensor(4)
    refs = WithinViewAugment()(query, 4, torch.Generator().manual_seed(0))
    assert refs.shape == (4, 3, 64, 64) and refs.min() >= 0 and refs.max() <= 1
    baseline = _correlation(query, unrelated)
    for ref in refs:
        assert (ref - query).abs().mean() > 0.01  # really transformed
        assert _correlation(ref, query) > baseline + 0.3
    assert not torch.allclose(refs[0], refs[1])


def test_same_generator_seed_gives_same_references() -> None:
    query = _as_tensor(5)
    augment = WithinViewAugment(max_rotation=45, elastic_strength=0.03)
    a = augment(query, 2, torch.Generator().manual_seed(9))
    b = augment(query, 2, torch.Generator().manual_seed(9))
    assert torch.equal(a, b)


def test_zero_strength_is_the_identity() -> None:
    query = _as_tensor(6)
    refs = WithinViewAugment(max_rotation=0, elastic_strength=0)(query, 2, torch.Generator())
    assert torch.allclose(refs, query.expand(2, -1, -1, -1), atol=1e-5)
