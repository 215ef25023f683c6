"""The nearest-reference search in blocks (``distance_blocks``, shared by torch and the line)
equals the whole matrix's max."""

import numpy as np
import torch

from padformer_edge.methods.padformer import distance_line as line_scoring
from padformer_edge.methods.padformer.distance_blocks import Blocks, blocked_best_cosines


def test_blocks_that_end_short_give_the_whole_matrix_maximum():
    rng = np.random.default_rng(0)
    cells = rng.standard_normal((50, 40)).astype(np.float32)
    bank = rng.standard_normal((120, 40)).astype(np.float32)
    # 7 query cells x 11 bank rows: none divides 50, 30 or 90, so blocks end short and the
    # last upright block stops at the turned rows
    upright, every = blocked_best_cosines(cells, bank, 30, Blocks(7, 11))
    whole = cells @ bank.T
    rounding = 40 * np.finfo(np.float32).eps * float(np.abs(whole).max())
    np.testing.assert_allclose(upright, whole[:, :30].max(axis=1), rtol=0, atol=rounding)
    np.testing.assert_allclose(every, whole.max(axis=1), rtol=0, atol=rounding)
    assert line_scoring.best_cosines(cells, bank[:30], 30)[1] is None


def test_tensors_and_arrays_search_alike():
    """One search for both kinds: the same blocks give the same maxima, within the
    rounding of a 40-term product summed in another order."""
    rng = np.random.default_rng(1)
    cells = rng.standard_normal((50, 40)).astype(np.float32)
    bank = rng.standard_normal((120, 40)).astype(np.float32)
    ours = blocked_best_cosines(cells, bank, 30, Blocks(7, 11))
    theirs = blocked_best_cosines(
        torch.from_numpy(cells), torch.from_numpy(bank), 30, Blocks(7, 11)
    )
    rounding = 40 * np.finfo(np.float32).eps * float(np.abs(cells @ bank.T).max())
    for one, other in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(one, other.numpy(), rtol=0, atol=rounding)
