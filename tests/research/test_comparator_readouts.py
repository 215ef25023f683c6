"""Stage C's readouts of the comparator's cell map (research/comparator_readouts.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from padformer_edge.detect.images import read_image, to_unit_tensor
from padformer_edge.errors import UserError
from padformer_edge.methods.compare.scorer import compare, reference_cells, squares
from padformer_edge_training.data.layouts import index_dataset
from research.comparator_readouts import (
    ComparatorReadout,
    ReadoutScorer,
    moved,
    moved_back,
    parse_readout,
    pass_offsets,
    readout_maps,
)
from tests.compare_readout import read_score

CPU = torch.device("cpu")


def test_a_readout_reads_back_from_its_word() -> None:
    assert parse_readout("s2") == ComparatorReadout()  # the product's
    for word in ("s0", "s1.5", "top4", "shift4-filter", "shift9-max"):
        assert parse_readout(word).text == word
    for bad in ("s9", "top0", "shift3-mean", "shift4-median", "max"):
        with pytest.raises(UserError, match="is not sS"):
            parse_readout(bad)


def test_a_pass_moved_and_moved_back_lands_where_it_was() -> None:
    """Half-cell passes start at the query itself; a map moved back from a moved query
    is the original away from the edge the move repeated."""
    assert pass_offsets(4) == [(0, 0), (0, 4), (4, 0), (4, 4)]
    assert len(set(pass_offsets(9))) == 9 and pass_offsets(9)[0] == (0, 0)
    image = torch.arange(2 * 3 * 16 * 16, dtype=torch.float32).view(2, 3, 16, 16)
    there = moved(image, 4, 3)
    assert torch.equal(there[..., 4:, 3:], image[..., :12, :13])
    back = moved_back(there[:, :1], 4, 3)
    assert torch.equal(back[..., :12, :13], image[:, :1, :12, :13])


def test_the_default_readout_is_the_products(tiny_comparator, tiny_data: Path) -> None:
    """``s2`` reads the cell scores exactly as the detector does (one computation), and a
    top-K readout averages the K highest cells."""
    model = tiny_comparator
    index = index_dataset(tiny_data)
    refs = [read_image(p) for p in index.good_train()["duck"][:2]]
    query = read_image(index.good_train()["duck"][2])
    scorer = ReadoutScorer(model, "x")
    scorer.prepare(refs)
    found = scorer.score([query])[0]
    cells = reference_cells(model, [to_unit_tensor(r, CPU) for r in refs])
    score = compare(model, [to_unit_tensor(query, CPU)], cells).score[0]
    amap = read_score(score, query.shape[:2], model.config.input_size)
    np.testing.assert_array_equal(found.anomaly_map, amap.numpy())
    assert found.score == float(amap.max())
    top = ReadoutScorer(model, "x", readout=parse_readout("top3"))
    top.prepare(refs)
    expected = float(score.flatten().topk(3).values.mean())
    assert top.score([query])[0].score == pytest.approx(expected)


def test_passes_combine_as_named(tiny_comparator, tiny_data: Path) -> None:
    """Four passes: the mean, the maximum, and the mean where the passes' variance is
    above its median, of the same four moved-back maps."""
    model = tiny_comparator
    index = index_dataset(tiny_data)
    refs = reference_cells(
        model, [to_unit_tensor(read_image(p), CPU) for p in index.good_train()["lego"][:2]]
    )
    query = squares(model, [to_unit_tensor(read_image(index.good_train()["lego"][3]), CPU)])
    maps = {
        c: readout_maps(model, query, refs, parse_readout(f"shift4-{c}"), True)[0]
        for c in ("mean", "max", "filter")
    }
    assert maps["mean"].shape == (1, 64, 64)
    assert torch.all(maps["max"] >= maps["mean"] - 1e-6)
    kept = maps["filter"] != 0
    assert 0 < int(kept.sum()) <= 64 * 64 // 2  # at most half above the median
    torch.testing.assert_close(maps["filter"][kept], maps["mean"][kept])
    single, cells = readout_maps(model, query, refs, ComparatorReadout(), False)
    assert torch.equal(single, cells)  # one pass: its cells, read as the product reads them
