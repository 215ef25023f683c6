"""Hybrid similarity and top-k selection against an explicit brute-force computation."""

import math

import torch
import torch.nn.functional as F

from padformer_edge.model.selection import hybrid_similarity, select_top_k


def _brute_force_scores(query, refs, weight, sigma):
    """S[b, j, i*M + l] written out position by position."""
    b, m, _ = query.shape
    n = refs.shape[1]
    side = math.isqrt(m)
    scores = torch.empty(b, m, n * m)
    for bi in range(b):
        for j in range(m):
            for i in range(n):
                for r in range(m):
                    cos = F.cosine_similarity(query[bi, j], refs[bi, i, r], dim=0)
                    dist = math.dist((j // side, j % side), (r // side, r % side))
                    spatial = math.exp(-dist / sigma)
                    scores[bi, j, i * m + r] = (1 - weight) * cos + weight * spatial
    return scores


def test_top_k_matches_brute_force_over_all_references():
    torch.manual_seed(0)
    query, refs = torch.randn(2, 16, 8), torch.randn(2, 3, 16, 8)
    expected = _brute_force_scores(query, refs, 0.3, 2.0)
    torch.testing.assert_close(hybrid_similarity(query, refs, 0.3, 2.0), expected)
    index = select_top_k(query, refs, 10, 0.3, 2.0)
    assert index.shape == (2, 16, 10)
    chosen = torch.gather(expected, 2, index)
    best = expected.sort(dim=-1, descending=True).values[..., :10]
    torch.testing.assert_close(chosen, best)
    assert index.max() >= 16  # candidates come from every reference, not just the first


def test_spatial_term_is_dropped_when_grids_differ_and_k_is_capped():
    torch.manual_seed(0)
    query, refs = torch.randn(1, 16, 8), torch.randn(1, 2, 4, 8)
    cos = F.normalize(query, dim=-1) @ F.normalize(refs.flatten(1, 2), dim=-1).transpose(1, 2)
    torch.testing.assert_close(hybrid_similarity(query, refs, 0.3, 2.0), cos)
    assert select_top_k(query, refs, 10, 0.3, 2.0).shape == (1, 16, 8)


def test_locality_breaks_ties_between_identical_features():
    query = torch.ones(1, 16, 4)
    refs = torch.ones(1, 1, 16, 4)
    index = select_top_k(query, refs, 1, 0.3, 2.0)
    assert torch.equal(index[0, :, 0], torch.arange(16))
