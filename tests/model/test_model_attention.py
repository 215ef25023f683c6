"""Position-specific cross-attention against a naive loop, and its memory footprint."""

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from padformer_edge.model.attention import PositionSpecificCrossAttention


def _naive(attn, x, shared, pool, index):
    """Build each position's own key set [shared, its k tokens] and attend one by one."""
    b, m, d = x.shape
    h, dh = attn.num_heads, attn.head_dim
    out = torch.empty(b, m, d)
    for bi in range(b):
        for j in range(m):
            keys = [] if shared is None else [shared[min(bi, shared.shape[0] - 1)]]
            if index is not None:
                keys.append(pool[bi, index[bi, j]])
            kv = torch.cat(keys, dim=0)
            q = attn.q(x[bi, j]).view(h, 1, dh)
            k = attn.k(kv).view(-1, h, dh).transpose(0, 1)
            v = attn.v(kv).view(-1, h, dh).transpose(0, 1)
            out[bi, j] = attn.proj(F.scaled_dot_product_attention(q, k, v).reshape(d))
    return out


def _inputs(seed=0, b=2, m=16, s=12, t=48, k=5, d=16):
    g = torch.Generator().manual_seed(seed)
    x, shared = torch.randn(b, m, d, generator=g), torch.randn(1, s, d, generator=g)
    pool = torch.randn(b, t, d, generator=g)
    index = torch.randint(0, t, (b, m, k), generator=g)
    return x, shared, pool, index


def test_matches_naive_loop_with_shared_and_selected_keys():
    torch.manual_seed(0)
    attn = PositionSpecificCrossAttention(16, 4)
    x, shared, pool, index = _inputs()
    key_values = attn.pool_key_values(pool)
    torch.testing.assert_close(
        attn(x, shared, key_values, index), _naive(attn, x, shared, pool, index)
    )


def test_matches_naive_loop_with_only_one_kind_of_key():
    torch.manual_seed(0)
    attn = PositionSpecificCrossAttention(16, 2)
    x, shared, pool, index = _inputs(seed=1)
    key_values = attn.pool_key_values(pool)
    torch.testing.assert_close(attn(x, None, key_values, index), _naive(attn, x, None, pool, index))
    batch_shared = shared.expand(2, -1, -1)
    torch.testing.assert_close(attn(x, batch_shared), _naive(attn, x, batch_shared, None, None))


class _LargestTensor(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                self.largest = max(self.largest, t.numel())
        return out


def test_unbiased_key_values_plus_bias_equal_the_projections():
    torch.manual_seed(0)
    attn = PositionSpecificCrossAttention(16, 4)
    tokens = torch.randn(2, 5, 16)
    both = attn.add_pool_bias(attn.pool_key_values(tokens, bias=False))
    torch.testing.assert_close(both, torch.cat([attn.k(tokens), attn.v(tokens)], -1))
    torch.testing.assert_close(attn.pool_key_values(tokens), both)


def test_memory_grows_with_shared_plus_k_not_with_m_times_k():
    b, m, d, heads, k, n = 1, 64, 32, 2, 10, 4
    shared_len = 32 + m
    attn = PositionSpecificCrossAttention(d, heads)
    x, shared, pool, index = _inputs(b=b, m=m, s=shared_len, t=n * m, k=k, d=d)
    with torch.no_grad():
        key_values = attn.pool_key_values(pool)  # once per reference set, outside the pass
    with torch.no_grad(), _LargestTensor() as probe:
        attn(x, shared, key_values, index)
    bound = b * max(heads * m * (shared_len + k), m * k * d, n * m * d, shared_len * d)
    per_position_key_sets = b * heads * m * (shared_len + m * k)
    assert probe.largest <= bound < per_position_key_sets
