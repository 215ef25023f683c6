"""How error maps become what an operator sees and its image score: the readout every
method shares, written once for torch tensors and numpy arrays alike.

A job (the anomaly map, or the map whose maximum is the image score) reads the passes of
one error mix as their consistency-filtered or plain mean, smoothed by a Gaussian counted
in model pixels; passes are folded in chunks with an exact mean and variance merge. The
torch detectors run this on their device (a GPU line pays no host CPU for it) and the
torch-free line detectors on numpy: each array kind brings only its primitives
(``array_ops``), and the arithmetic that composes them is here alone, so the two can
differ by float32 rounding only.

The readout stays outside the exported graphs: its Gaussian and its shrink factor follow
the size of each camera frame, and the runtimes' pooling and padding take those as fixed
attributes of a graph.

No torch is imported here: a line PC reads its maps through this module too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from padformer_edge.detect.array_ops import Array, ops_of
from padformer_edge.detect.map_geometry import frame_max
from padformer_edge.detect.numpy_ops import pooled_weights
from padformer_edge.detect.readout_constants import (
    MAX_CHUNK_VALUES,
    MAX_READOUT_SIGMA,
    PAPER_READOUT_SETTINGS,
    SMOOTH_MAX_SIGMA,
)


@dataclass(frozen=True)
class Readout:
    """How one job reads the passes of one error mix: the paper's consistency filter or
    the plain pass mean, then a Gaussian of ``sigma`` pixels of the model's input (0: none).

    Sigma is counted in model pixels so that a readout chosen on 224 px renders smooths
    the same share of the part in a 20 MP camera frame.
    """

    consistency_filter: bool = True
    sigma: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.sigma <= MAX_READOUT_SIGMA:
            raise ValueError(
                f"readout sigma must lie in [0, {MAX_READOUT_SIGMA}], not {self.sigma}."
            )

    def apply(self, mean: Array, variance: Array | None, scale: float) -> Array:
        """The ``[H, W]`` map of this readout; ``scale`` is query pixels per model pixel.
        ``variance`` is needed only by the consistency filter (None: no passes read)."""
        if self.consistency_filter:
            if variance is None:
                raise ValueError("the consistency filter reads the passes' variance.")
            mean = consistency_filter(mean, variance)
        return smooth(mean, self.sigma * scale)


PAPER_READOUT = Readout(**PAPER_READOUT_SETTINGS)  # type: ignore[arg-type]
"""The paper's map and score: the consistency-filtered pass mean, unsmoothed."""


def consistency_filter(mean: Array, variance: Array) -> Array:
    """Keep ``mean`` where ``variance`` is strictly above its median, zero elsewhere.

    The median is the lower middle value and ties at it are dropped, so at least half of
    the pixels are always zeroed: a map whose variance is flat everywhere has nothing
    inconsistent to report.
    """
    ops = ops_of(mean)
    return ops.keep_above(mean, variance, ops.lower_median(variance))


def smooth(amap: Array, sigma: float) -> Array:
    """``[H, W]`` map blurred by a Gaussian of ``sigma`` pixels (0: unchanged).

    A wide blur on a large camera frame runs on a frame shrunk by an integer factor (area
    average) and is brought back bilinearly: the result differs from a full-size blur by
    less than the blur removes, and a 20 MP frame does not need a 2,000-tap kernel.
    """
    if sigma <= 0:
        return amap
    ops = ops_of(amap)
    factor = shrink_factor(sigma)
    small = ops.average_pool(amap, factor) if factor > 1 else amap
    blurred = _blur(small, sigma / factor)
    if blurred is None:
        return amap
    return ops.upsample(blurred, (int(amap.shape[-2]), int(amap.shape[-1])))


def shrink_factor(sigma: float) -> int:
    """The integer factor a map is shrunk by before a blur of ``sigma`` pixels, so that
    the blur stays under ``SMOOTH_MAX_SIGMA`` pixels of the shrunk map."""
    return max(1, int(sigma // SMOOTH_MAX_SIGMA))


def _blur(small: Array, sigma: float) -> Array | None:
    """``small`` blurred by a Gaussian of ``sigma`` of its pixels, its radius held inside
    the map; None where that leaves no tap beside the centre (nothing to blur)."""
    radius = min(int(4 * sigma + 0.5), min(small.shape[-2:]) - 1)
    if radius < 1:
        return None
    return ops_of(small).gaussian_blur(small, 2 * radius + 1, sigma)


def smooth_cells(cells: Array, size: tuple[int, int], sigma: float) -> Array:
    """``smooth`` of ``cells`` (an ``[h, w]`` map on a coarser grid: per-cell scores)
    brought bilinearly to ``size``, returned on the grid it was read on: resized to the
    frame once, later, by whatever shows it (``map_geometry.frame_map``).

    The map is read where its blur is read: with no blur, the cells themselves (brought to
    ``size`` they are the bilinear map the readout drew there); for a narrow blur, at
    ``size`` itself (``smooth(upsample(cells, size))``); for a wide one, straight on the
    shrunk grid, by one product with the weights of the upsampling and the area average
    together (``numpy_ops.pooled_weights``: the same linear map as upsampling and then
    shrinking, so the same values but for float32 rounding). A crop of a camera frame
    is read at the crop's size and pasted into the frame by ``frame_map``'s box.
    """
    if sigma <= 0:
        return cells
    ops = ops_of(cells)
    factor = shrink_factor(sigma)
    if factor == 1:
        return smooth(ops.upsample(cells, size), sigma)
    rows = pooled_weights(int(cells.shape[-2]), size[0], factor)
    cols = pooled_weights(int(cells.shape[-1]), size[1], factor)
    blurred = _blur(ops.resize_with(ops.as_float32(cells), rows, cols), sigma / factor)
    return cells if blurred is None else blurred  # None: too small a map to blur


def smooth_levels(levels: Sequence[Array], size: tuple[int, int], sigma: float) -> Array:
    """``smooth_cells`` of the mean of several cell maps, each on its own grid (the
    distance at each magnification: 1x cells, 2x cells...), whose map at ``size`` is the
    mean of each brought bilinearly to ``size``. One level is ``smooth_cells``; several
    are read at ``size`` for no blur or a narrow one (the mean of the upsampled maps, as
    drawn before), and for a wide one each lands on the shrunk grid by its own product
    (``numpy_ops.pooled_weights``) before their mean is blurred there: the same linear
    map, so the same values but for float32 rounding."""
    if len(levels) == 1:
        return smooth_cells(levels[0], size, sigma)
    ops = ops_of(levels[0])
    factor = shrink_factor(sigma) if sigma > 0 else 1
    if factor > 1:
        shrunk = [
            ops.resize_with(
                ops.as_float32(level),
                pooled_weights(int(level.shape[-2]), size[0], factor),
                pooled_weights(int(level.shape[-1]), size[1], factor),
            )
            for level in levels
        ]
        blurred = _blur(ops.mean(ops.stack(shrunk, 0), 0), sigma / factor)
        if blurred is not None:
            return blurred
    full = ops.mean(ops.stack([ops.upsample(level, size) for level in levels], 0), 0)
    return smooth(full, sigma) if factor == 1 else full


@dataclass
class ScoredQuery:
    """The anomaly map of one query (a tensor or an array, as it was scored; from
    ``read_cells``, an array on the grid it was read on), its score and per-pass error
    summaries."""

    anomaly_map: Array
    score: float
    pass_mean: list[float]
    pass_max: list[float]


@dataclass
class PassMoments:
    """Running count, mean and sum of squared deviations of error maps over passes."""

    count: int
    mean: Array
    sq_dev: Array

    @classmethod
    def of(cls, errors: Array) -> PassMoments:
        ops = ops_of(errors)
        mean = ops.mean(errors, 0)
        return cls(errors.shape[0], mean, ops.sum(ops.square(errors - mean), 0))

    def merge(self, other: PassMoments) -> PassMoments:
        """Exact combination of two disjoint groups of passes (Chan et al.)."""
        square = ops_of(self.mean).square
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / count)
        sq_dev = self.sq_dev + other.sq_dev + square(delta) * (self.count * other.count / count)
        return PassMoments(count, mean, sq_dev)

    @property
    def variance(self) -> Array:
        """Population variance (divide by the number of passes), as the paper defines it."""
        return self.sq_dev / self.count


class JobReadouts(Protocol):
    """What reads a metric's maps: one readout for the map's job, one for the score's."""

    map_readout: Readout
    score_readout: Readout


def read_jobs(
    readouts: JobReadouts,
    means: Sequence[Array],
    variances: Sequence[Array | None],
    scale: float,
) -> tuple[Array, float]:
    """The anomaly map and image score of one query's job channels (their pass means and
    variances): the map's job reads the first channel, the score's the last (one channel:
    both read it)."""
    anomaly_map = readouts.map_readout.apply(means[0], variances[0], scale)
    # one mix read one way (the paper's metrics) is one map: filter a 20 MP frame once
    same = len(means) == 1 and readouts.score_readout == readouts.map_readout
    score_map = (
        anomaly_map if same else readouts.score_readout.apply(means[-1], variances[-1], scale)
    )
    return anomaly_map, float(score_map.max())


def fold_passes(
    readouts: JobReadouts,
    errors_of: Callable[[slice], Array],
    passes: int,
    size: tuple[int, int],
    input_size: int,
) -> ScoredQuery:
    """Score one query of ``size`` from ``passes`` error maps that ``errors_of`` makes for
    a slice of the passes (``[p, H, W]``, or ``[p, jobs, H, W]`` for a metric that ranks
    images with another mix than it draws maps with), folded in chunks so a 20 MP frame
    never holds every pass's map at once; ``input_size`` is the model's side, which sets
    the readouts' pixel scale."""
    chunk = max(1, MAX_CHUNK_VALUES // (3 * size[0] * size[1]))
    moments: PassMoments | None = None
    pass_mean: list[float] = []
    pass_max: list[float] = []
    for start in range(0, passes, chunk):
        errors = errors_of(slice(start, start + chunk))
        errors = errors if errors.ndim == 4 else errors[:, None]  # [p, map(, score), H, W]
        ops = ops_of(errors)
        pass_mean += [float(value) for value in ops.mean(errors[:, 0], (1, 2))]
        pass_max += [float(value) for value in ops.amax(errors[:, 0], (1, 2))]
        folded = PassMoments.of(errors)
        moments = folded if moments is None else moments.merge(folded)
    assert moments is not None, "a query is scored from at least one pass"
    scale = max(size) / input_size  # query pixels per model pixel
    anomaly_map, score = read_jobs(readouts, moments.mean, moments.variance, scale)
    return ScoredQuery(anomaly_map, score, pass_mean, pass_max)


def read_without_passes(
    readouts: JobReadouts, maps: Sequence[Array], size: tuple[int, int], input_size: int
) -> ScoredQuery:
    """Score one query of ``size`` from the maps a metric that reads no pass made for it
    (the map's job first, the score's last), each read with its job's readout, as
    ``fold_passes`` would read passes that all agree (no variance, no per-pass summaries)."""
    scale = max(size) / input_size  # query pixels per model pixel
    anomaly_map, score = read_jobs(readouts, maps, [None] * len(maps), scale)
    return ScoredQuery(anomaly_map, score, [], [])


def read_cells(
    readouts: JobReadouts, cells: Sequence[Array], size: tuple[int, int], input_size: int
) -> ScoredQuery:
    """``read_levels`` of one cell map per job (the map's job first, the score's last)."""
    return read_levels(readouts, [[job] for job in cells], size, input_size)


def read_levels(
    readouts: JobReadouts,
    jobs: Sequence[Sequence[Array]],
    size: tuple[int, int],
    input_size: int,
) -> ScoredQuery:
    """``read_without_passes`` of maps on coarser grids standing for a query of ``size``:
    per job (the map's first, the score's last) the cell maps whose mean at ``size`` is
    its map (``[h, w]`` per-cell scores of either kind, one per magnification), read on
    the grid their blur needs (``smooth_levels``) and left there, on the host: the
    anomaly map is brought to the frame once, by what shows it
    (``map_geometry.frame_map``). The image score is the maximum the score's job takes
    at ``size`` (``map_geometry.frame_max``), as if it were drawn there."""
    scale = max(size) / input_size  # query pixels per model pixel

    def read(readout: Readout, levels: Sequence[Array]) -> np.ndarray:
        if readout.consistency_filter:
            raise ValueError("the consistency filter reads passes; a cell map has none.")
        found = smooth_levels(levels, size, readout.sigma * scale)
        return ops_of(found).to_host(found)

    anomaly_map = read(readouts.map_readout, jobs[0])
    same = len(jobs) == 1 and readouts.score_readout == readouts.map_readout
    score_map = anomaly_map if same else read(readouts.score_readout, jobs[-1])
    return ScoredQuery(anomaly_map, frame_max(score_map, size), [], [])
