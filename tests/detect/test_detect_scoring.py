"""LAB error, the variance filter and the pass statistics of detection scoring."""

import cv2
import numpy as np
import pytest
import torch

from padformer_edge.detect.readout import PassMoments, Readout, consistency_filter, smooth
from padformer_edge.detect.readout_constants import SMOOTH_MAX_SIGMA
from padformer_edge.methods.padformer.paper_metrics import ColourMetric
from padformer_edge.methods.padformer.passes import score_query


def as_tensor(image01: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(image01).permute(2, 0, 1).unsqueeze(0).float()


def test_lab_error_of_uniform_red_against_black_matches_hand_value():
    red = np.zeros((16, 16, 3), np.float32)
    red[..., 0] = 1.0
    black = np.zeros_like(red)
    metric = ColourMetric("lab")
    errors = metric.errors(metric.target(as_tensor(red), None), as_tensor(black), (16, 16))
    # sRGB red is L*=53.24, a*=80.09, b*=67.20 under D65; black is the origin.
    expected = 53.24**2 + 80.09**2 + 67.20**2
    assert errors.shape == (1, 16, 16)
    assert errors.min().item() == pytest.approx(expected, rel=2e-3)
    assert errors.max().item() == pytest.approx(expected, rel=2e-3)


def test_lab_error_matches_opencv_route_with_upsampling():
    rng = np.random.default_rng(3)
    query = rng.random((24, 40, 3), dtype=np.float32)
    recon_small = rng.random((12, 20, 3), dtype=np.float32)
    metric = ColourMetric("lab")
    ours = metric.errors(metric.target(as_tensor(query), None), as_tensor(recon_small), (24, 40))

    # Independent route: OpenCV LAB, OpenCV blur (reflect-101 borders, as torch's reflect)
    # and OpenCV's half-pixel-centred bilinear resize.
    recon = cv2.resize(recon_small, (40, 24), interpolation=cv2.INTER_LINEAR)
    query_lab = cv2.cvtColor(query, cv2.COLOR_RGB2Lab)
    blurred = cv2.GaussianBlur(query_lab, (7, 7), 1.4, borderType=cv2.BORDER_REFLECT_101)
    expected = ((blurred - cv2.cvtColor(recon, cv2.COLOR_RGB2Lab)) ** 2).sum(axis=2)
    # OpenCV's float LAB uses interpolated tables (up to ~0.4 units off the exact formula),
    # so compare colour distances: within 1 LAB unit, under one just-noticeable difference.
    np.testing.assert_allclose(np.sqrt(ours[0].numpy()), np.sqrt(expected), atol=1.0)
    assert np.abs(np.sqrt(ours[0].numpy()) - np.sqrt(expected)).mean() < 0.2


def test_variance_filter_zeroes_half_and_keeps_the_highest_variance():
    generator = torch.Generator().manual_seed(0)
    mean = torch.rand(31, 47, generator=generator) + 0.1
    variance = torch.rand(31, 47, generator=generator)
    kept = consistency_filter(mean, variance) != 0
    assert (~kept).sum() >= kept.numel() / 2
    assert variance[kept].min() > variance[~kept].max()
    assert torch.equal(consistency_filter(mean, variance)[kept], mean[kept])


def test_variance_filter_zeroes_everything_when_variance_is_flat():
    mean = torch.rand(8, 8)
    assert consistency_filter(mean, torch.full((8, 8), 0.5)).count_nonzero() == 0


def test_chunked_moments_equal_direct_mean_and_population_variance():
    errors = torch.rand(15, 9, 7, dtype=torch.float64)
    merged = PassMoments.of(errors[:4]).merge(PassMoments.of(errors[4:11]))
    merged = merged.merge(PassMoments.of(errors[11:]))
    variance, mean = torch.var_mean(errors, dim=0, correction=0)
    torch.testing.assert_close(merged.mean, mean)
    torch.testing.assert_close(merged.variance, variance)


def test_score_is_the_maximum_of_the_filtered_map_and_chunking_changes_nothing(monkeypatch):
    generator = torch.Generator().manual_seed(1)
    query = torch.rand(1, 3, 20, 30, generator=generator)
    recon = torch.rand(6, 3, 10, 10, generator=generator)
    metric = ColourMetric("lab")
    whole = score_query(metric, query, None, recon)
    monkeypatch.setattr("padformer_edge.detect.readout.MAX_CHUNK_VALUES", 3 * 20 * 30 * 2)
    chunked = score_query(metric, query, None, recon)
    assert whole.score == pytest.approx(whole.anomaly_map.max().item())
    assert whole.anomaly_map.shape == (20, 30)
    assert len(whole.pass_mean) == len(whole.pass_max) == 6
    # The same sums merged in another order: float32 rounding of the map's own magnitude.
    scale = float(whole.anomaly_map.abs().max())
    torch.testing.assert_close(chunked.anomaly_map, whole.anomaly_map, rtol=1e-5, atol=1e-5 * scale)
    assert chunked.pass_max == whole.pass_max


def test_smoothing_keeps_a_flat_map_and_spreads_a_point_as_a_gaussian():
    flat = torch.full((40, 50), 3.0)
    torch.testing.assert_close(smooth(flat, 2.0), flat)  # weights sum to one
    assert smooth(flat, 0.0) is flat
    point = torch.zeros(41, 41)
    point[20, 20] = 1.0
    blurred = smooth(point, 2.0)
    # a sampled Gaussian of sigma 2 peaks at about 1 / (2 pi sigma^2); its kernel is
    # renormalised over 17 taps, which moves the peak by far less than 1 %
    assert float(blurred[20, 20]) == pytest.approx(1 / (2 * np.pi * 4), rel=1e-2)
    assert float(blurred.sum()) == pytest.approx(1.0, rel=1e-4)


def test_wide_smoothing_of_a_large_frame_runs_shrunk_and_agrees_with_a_full_blur():
    """Above SMOOTH_MAX_SIGMA the blur runs on a frame shrunk by an integer factor; on a
    feature much wider than that factor the result matches a full-size blur closely."""
    import kornia

    yy, xx = torch.meshgrid(torch.arange(320.0), torch.arange(320.0), indexing="ij")
    blob = torch.exp(-((yy - 150) ** 2 + (xx - 170) ** 2) / (2 * 30.0**2))
    sigma = 3 * SMOOTH_MAX_SIGMA  # factor 3
    fast = smooth(blob, sigma)
    radius = int(4 * sigma + 0.5)
    full = kornia.filters.gaussian_blur2d(
        blob[None, None], (2 * radius + 1,) * 2, (sigma, sigma), border_type="reflect"
    )[0, 0]
    # the shrink and bilinear return act on a map that varies over 30+ px: a few % of its
    # range at most, against a blur that lowers its peak by about half
    assert float((fast - full).abs().max()) < 0.03 * float(full.max())
    assert fast.shape == blob.shape


def test_a_readout_counts_its_sigma_in_model_pixels():
    """The same part in a frame twice the model's size is smoothed twice as wide."""
    mean = torch.zeros(30, 30)
    mean[15, 15] = 1.0
    readout = Readout(consistency_filter=False, sigma=2.0)
    at_model_size = readout.apply(mean, torch.ones_like(mean), scale=1.0)
    twice = readout.apply(mean, torch.ones_like(mean), scale=2.0)
    assert float(at_model_size.max()) == pytest.approx(1 / (2 * np.pi * 4), rel=1e-2)
    assert float(twice.max()) == pytest.approx(1 / (2 * np.pi * 16), rel=1e-2)
    filtered = Readout(consistency_filter=True, sigma=0.0)
    assert float(filtered.apply(mean, torch.ones_like(mean), 1.0).abs().max()) == 0.0
    with pytest.raises(ValueError, match="readout sigma must lie in"):
        Readout(False, -1.0)


def test_a_metric_reads_its_map_and_its_score_each_with_its_own_readout():
    generator = torch.Generator().manual_seed(2)
    query = torch.rand(1, 3, 20, 20, generator=generator)
    recon = torch.rand(6, 3, 10, 10, generator=generator)
    metric = ColourMetric("lab")
    paper = score_query(metric, query, None, recon)
    metric.map_readout = Readout(consistency_filter=False, sigma=0.0)
    metric.score_readout = Readout(consistency_filter=False, sigma=1.0)
    plain = score_query(metric, query, None, recon)
    # the plain pass mean keeps every pixel the filter zeroed, and equals it elsewhere
    kept = paper.anomaly_map != 0
    assert bool((plain.anomaly_map > 0).all()) and not bool(kept.all())
    torch.testing.assert_close(plain.anomaly_map[kept], paper.anomaly_map[kept])
    # the score is the maximum of the pass mean smoothed by 1 model px = 2 query px
    expected = smooth(plain.anomaly_map, 2.0).max()
    assert plain.score == pytest.approx(float(expected), rel=1e-5)
