"""The one readout on both array kinds: torch tensors (the torch detectors, on their
device) and numpy arrays (the torch-free line) go through the same composition and
differ only by float32 rounding."""

import numpy as np
import pytest
import torch

from padformer_edge.detect import numpy_ops
from padformer_edge.detect.array_ops import flat_cells, turned_bank
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.detect.parity import PARITY_RTOL
from padformer_edge.detect.readout import (
    Readout,
    fold_passes,
    ops_of,
    read_cells,
    read_without_passes,
    smooth,
)
from padformer_edge.detect.readout_constants import SMOOTH_MAX_SIGMA
from padformer_edge.detect.tensor_ops import TORCH_OPS


class Jobs:
    """A metric's two readouts, as the detectors hold them."""

    def __init__(self, map_readout: Readout, score_readout: Readout) -> None:
        self.map_readout, self.score_readout = map_readout, score_readout


def test_each_kind_gets_its_own_primitives():
    assert ops_of(np.zeros((2, 2), np.float32)) is numpy_ops.NUMPY_OPS
    assert ops_of(torch.zeros(2, 2)) is TORCH_OPS


@pytest.mark.parametrize("sigma", [0.0, 1.5, 3.0 * SMOOTH_MAX_SIGMA / 2])
def test_passes_folded_in_numpy_match_torch(monkeypatch, sigma):
    """Five passes of two jobs, folded in chunks of two, read with the consistency
    filter (map) and a smoothing wide enough at this scale to run shrunk (score)."""
    rng = np.random.default_rng(4)
    errors = rng.random((5, 2, 48, 64), dtype=np.float32) * 10
    monkeypatch.setattr("padformer_edge.detect.readout.MAX_CHUNK_VALUES", 3 * 48 * 64 * 2)
    jobs = Jobs(Readout(True, 0.0), Readout(False, sigma))
    size, input_size = (48, 64), 16  # 4 query pixels per model pixel

    def of(source):
        return lambda part: source[part]

    ours = fold_passes(jobs, of(errors), 5, size, input_size)
    theirs = fold_passes(jobs, of(torch.from_numpy(errors)), 5, size, input_size)
    assert isinstance(ours.anomaly_map, np.ndarray)
    assert isinstance(theirs.anomaly_map, torch.Tensor)
    # float32 sums taken in another order: rounding of the maps' own magnitude
    bound = 1e-5 * float(np.abs(errors).max())
    np.testing.assert_allclose(ours.anomaly_map, theirs.anomaly_map.numpy(), atol=bound, rtol=0)
    assert ours.score == pytest.approx(theirs.score, abs=bound)
    np.testing.assert_allclose(ours.pass_mean, theirs.pass_mean, rtol=1e-6)
    assert ours.pass_max == theirs.pass_max  # a maximum is taken, not summed


def test_maps_without_passes_read_alike_in_both_kinds():
    rng = np.random.default_rng(5)
    amap = rng.random((90, 120), dtype=np.float32)
    jobs = Jobs(Readout(False, 2.0), Readout(False, 2.0))
    ours = read_without_passes(jobs, [amap], (90, 120), 30)
    theirs = read_without_passes(jobs, [torch.from_numpy(amap)], (90, 120), 30)
    np.testing.assert_allclose(ours.anomaly_map, theirs.anomaly_map.numpy(), atol=1e-6, rtol=0)
    assert ours.score == pytest.approx(float(ours.anomaly_map.max()))
    assert ours.pass_mean == ours.pass_max == []


@pytest.mark.parametrize("kind", [np.asarray, torch.from_numpy], ids=["numpy", "torch"])
@pytest.mark.parametrize(
    "size, sigma",
    [((70, 90), 2.0), ((300, 420), 2.0), ((1500, 2700), 2.0), ((1500, 2700), 0.0)],
    ids=["small", "narrow-blur", "shrunk-blur", "no-blur"],
)
def test_cells_read_at_their_size_are_the_map_upsampled_first(kind, size, sigma):
    """A cell map read where its blur is read, and brought to the frame once
    (``frame_map``), is the map drawn at the query's size first and read there
    (``smooth`` of the upsampled map), and the score is that map's maximum: the same
    steps for a narrow blur, the same linear map for a blur run shrunk (a 2700-px frame at
    320 px per model side shrinks by 2), the same bilinear samples for no blur (the map is
    the cells themselves), within float32 rounding far below ``PARITY_RTOL``."""
    rng = np.random.default_rng(8)
    cells = kind(rng.random((40, 40), dtype=np.float32))
    jobs = Jobs(Readout(False, sigma), Readout(False, sigma))
    ours = read_cells(jobs, [cells], size, 320)
    upsampled = ops_of(cells).upsample(cells, size)
    expected = smooth(upsampled, sigma * max(size) / 320)
    assert isinstance(ours.anomaly_map, np.ndarray)
    found, wanted = frame_map(ours.anomaly_map, size), ops_of(cells).to_host(expected)
    scale = float(wanted.max())
    # float32 rounding of a product of three matrices of a few hundred terms each
    assert float(np.abs(found - wanted).max()) <= 1e-5 * scale < PARITY_RTOL * scale
    assert abs(ours.score - float(wanted.max())) <= 1e-5 * scale
    if sigma == 2.0 and max(size) < 1000:  # read at the query's size: the same steps
        np.testing.assert_array_equal(ours.anomaly_map, wanted)
    if sigma == 0.0:  # nothing to blur: the cells are the map
        assert ours.anomaly_map.shape == (40, 40)


def test_cells_blurred_wide_stay_on_the_shrunk_grid():
    """A wide blur's map is carried on the shrunk grid it was blurred on (a 2700-px frame
    at 320 px per model side: halved), as upsampling, shrinking and blurring make it,
    with no resize after: the one resize is the consumer's."""
    from padformer_edge.detect.readout import shrink_factor

    rng = np.random.default_rng(9)
    cells = rng.random((40, 40), dtype=np.float32)
    size, sigma = (1500, 2700), 2.0 * 2700 / 320
    jobs = Jobs(Readout(False, 2.0), Readout(False, 2.0))
    factor = shrink_factor(sigma)
    assert factor == 2
    small = numpy_ops.average_pool(numpy_ops.upsample(cells, size), factor)
    radius = int(4 * sigma / factor + 0.5)
    expected = numpy_ops.gaussian_blur(small, 2 * radius + 1, sigma / factor)
    found = read_cells(jobs, [cells], size, 320).anomaly_map
    assert found.shape == (750, 1350)
    # float32 rounding of a product of three matrices of a few hundred terms each
    np.testing.assert_allclose(found, expected, rtol=0, atol=1e-5 * float(expected.max()))
    with pytest.raises(ValueError, match="consistency filter"):
        read_cells(Jobs(Readout(True, 0.0), Readout(True, 0.0)), [cells], (70, 90), 320)


def test_a_turned_bank_is_the_same_rows_in_both_kinds():
    """Upright cells first, then each quarter turn's, image-major, for tensors and
    arrays alike."""
    rng = np.random.default_rng(10)
    squares = rng.random((2, 3, 8, 8), dtype=np.float32)

    def cells_of(images):
        return images[:, :, ::2, ::2] * 2.0  # a stand-in CNN: stride 2, 3 channels

    ours, upright = turned_bank(cells_of, squares, (1, 2, 3))
    theirs, same = turned_bank(cells_of, torch.from_numpy(squares), (1, 2, 3))
    assert upright == same == 2 * 4 * 4 and ours.shape == (4 * upright, 3)
    np.testing.assert_array_equal(ours, theirs.numpy())
    np.testing.assert_array_equal(ours[:upright], flat_cells(cells_of(squares)))
    turned = np.rot90(squares, 2, axes=(-2, -1))
    np.testing.assert_array_equal(ours[2 * upright : 3 * upright], flat_cells(cells_of(turned)))


@pytest.mark.parametrize("space", ["lab", "rgb"])
def test_colour_errors_in_numpy_match_torch(space):
    from padformer_edge.methods.padformer.errors import colour_errors, colour_target

    rng = np.random.default_rng(6)
    query = rng.random((1, 3, 30, 40), dtype=np.float32)
    recon = rng.random((3, 3, 16, 16), dtype=np.float32) * 1.2 - 0.1  # clipped to [0, 1]
    ours = colour_errors(colour_target(query, space), recon, (30, 40), space)
    target = colour_target(torch.from_numpy(query), space)
    theirs = colour_errors(target, torch.from_numpy(recon), (30, 40), space).numpy()
    assert ours.shape == theirs.shape == (3, 30, 40)
    # LAB's cube root and float32 products: a few ulps of the largest squared distance
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5 * float(theirs.max()))


def test_feature_errors_and_the_mix_in_numpy_match_torch():
    from padformer_edge.methods.padformer.errors import feature_errors
    from padformer_edge.methods.padformer.mix import Mix, mix_jobs

    rng = np.random.default_rng(7)
    cells, grid, channels = 2, 3, 4
    target = rng.random((1, grid * grid, channels * cells * cells), dtype=np.float32)
    predicted = rng.random((5, grid * grid, channels * cells * cells), dtype=np.float32)
    weights = (rng.random((5, grid * grid)) > 0.5).astype(np.float32)
    colour = rng.random((5, 20, 24), dtype=np.float32)
    reference = rng.random((20, 24), dtype=np.float32)
    mixes = (Mix(0.4, 2.0, 1, False), Mix(0.7))

    def run(kind):
        feature = feature_errors(
            kind(target), kind(predicted), kind(weights), (20, 24), cells, grid, True
        )
        return mix_jobs(kind(colour), feature, (2.0, 3.0), mixes, [kind(reference), None], 1.0)

    ours, theirs = run(np.asarray), run(torch.from_numpy).numpy()
    assert ours.shape == theirs.shape == (5, 2, 20, 24)
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-5 * float(theirs.max()))
