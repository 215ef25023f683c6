"""The line runtime's nearest-reference search in blocks equals the whole matrix's max."""

import numpy as np

from padformer_edge.methods.padformer import distance_line as line_scoring


def test_blocks_that_end_short_give_the_whole_matrix_maximum(monkeypatch):
    rng = np.random.default_rng(0)
    cells = rng.standard_normal((50, 40)).astype(np.float32)
    bank = rng.standard_normal((120, 40)).astype(np.float32)
    # 7 query cells x 11 bank rows: none divides 50, 30 or 90, so blocks end short and the
    # last upright block stops at the turned rows
    monkeypatch.setattr(line_scoring, "SIMILARITY_QUERY_ROWS", 7)
    monkeypatch.setattr(line_scoring, "SIMILARITY_BANK_ROWS", 11)
    upright, every = line_scoring.best_cosines(cells, bank, 30)
    whole = cells @ bank.T
    rounding = 40 * np.finfo(np.float32).eps * float(np.abs(whole).max())
    np.testing.assert_allclose(upright, whole[:, :30].max(axis=1), rtol=0, atol=rounding)
    np.testing.assert_allclose(every, whole.max(axis=1), rtol=0, atol=rounding)
    assert line_scoring.best_cosines(cells, bank[:30], 30)[1] is None
