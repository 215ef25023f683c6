"""Same seed, same numbers: detection scores must be reproducible bit for bit."""

import torch

from padformer_edge.model.padformer import build_model


def _run(seed):
    torch.manual_seed(seed)
    model = build_model("tiny").eval()
    data = torch.Generator().manual_seed(123)
    query = torch.randn(2, 3, 64, 64, generator=data)
    refs = torch.randn(1, 3, 3, 64, 64, generator=data)
    with torch.no_grad():
        out, mask = model(query, refs, generator=torch.Generator().manual_seed(seed))
        return out.pixels, mask


def test_same_seed_gives_identical_output_and_mask():
    (a, mask_a), (b, mask_b) = _run(5), _run(5)
    assert torch.equal(a, b) and torch.equal(mask_a, mask_b)
    c, mask_c = _run(6)
    assert not torch.equal(a, c) and not torch.equal(mask_a, mask_c)
