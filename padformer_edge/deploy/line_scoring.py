"""Per-query scoring in numpy: the torch detector's ``score_query`` for the line runtime.

The metric's settings are not decided here: the exporter resolves them with the torch
metric (``deploy.line_export.scoring_record``) and stores them in the profile, and this
module only does the arithmetic. So the model's validated weights, zooms and readouts
have one source, and a profile scores on the line with exactly the settings it was
calibrated with. Only the metrics a line runs are here: the paper's ``lab`` (and
``rgb``), ``fused`` and ``distance``; the encoder ``feature`` error of pixel models is
refused at export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from padformer_edge.deploy import arrays
from padformer_edge.detect.scoring_config import (
    BLUR_KERNEL,
    BLUR_SIGMA,
    MAX_CHUNK_VALUES,
    SMOOTH_MAX_SIGMA,
)

F32 = np.float32
# query cells x bank rows per similarity block (``best_cosines``): 512K cosines, 2 MiB,
# within a core's L2. Torch's detector uses 512 x 2048 (``reference_distance``); with
# numpy's layout here 4096 x 128 took a quarter less time than that on the edge preset
# with 12 references (2304 query cells against 110,592 bank rows, one BLAS thread)
SIMILARITY_QUERY_ROWS = 4096
SIMILARITY_BANK_ROWS = 128


@dataclass(frozen=True)
class LineReadout:
    """``scoring.Readout``: the consistency filter or the plain mean, then a Gaussian."""

    consistency_filter: bool
    sigma: float

    def apply(self, mean: np.ndarray, variance: np.ndarray, scale: float) -> np.ndarray:
        amap = consistency_filter(mean, variance) if self.consistency_filter else mean
        return smooth(amap, self.sigma * scale)


@dataclass(frozen=True)
class LineMix:
    """``scoring.Mix``: one fused job's LAB weight and nearest-reference term."""

    lab_weight: float
    reference_weight: float
    zoom: int
    turns: bool


@dataclass(frozen=True)
class ScoringSpec:
    """Everything the numpy scoring needs, as the exporter recorded it (``scoring.json``)."""

    metric: str
    signature: dict[str, Any]
    map_readout: LineReadout
    score_readout: LineReadout
    mixes: tuple[LineMix, ...]
    scales: tuple[float, float]
    reconstruction_weight: float
    score_masked_cells: bool
    img_size: int
    grid_size: int
    cells_per_side: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ScoringSpec:
        return cls(
            metric=record["metric"],
            signature=record["signature"],
            map_readout=LineReadout(**record["map_readout"]),
            score_readout=LineReadout(**record["score_readout"]),
            mixes=tuple(LineMix(**mix) for mix in record["mixes"]),
            scales=tuple(record["scales"]),  # type: ignore[arg-type]
            reconstruction_weight=record["reconstruction_weight"],
            score_masked_cells=record["score_masked_cells"],
            img_size=record["img_size"],
            grid_size=record["grid_size"],
            cells_per_side=record["cells_per_side"],
            mean=tuple(record["mean"]),  # type: ignore[arg-type]
            std=tuple(record["std"]),  # type: ignore[arg-type]
        )

    @property
    def reads_passes(self) -> bool:
        return self.metric != "distance"

    @property
    def reads_features(self) -> bool:
        """True for the metrics that compare the frozen CNN's features (edge models)."""
        return self.metric in ("fused", "distance")

    @property
    def zoom(self) -> int:
        """Magnifications the reference term reads (0: it reads none)."""
        return max((mix.zoom for mix in self.mixes if mix.reference_weight > 0), default=0)

    @property
    def turns(self) -> bool:
        return any(mix.turns for mix in self.mixes if mix.reference_weight > 0)

    def normalize(self, images01: np.ndarray) -> np.ndarray:
        """``model.normalize``: [0, 1] RGB -> the model's input."""
        mean = np.array(self.mean, dtype=F32)[:, None, None]
        std = np.array(self.std, dtype=F32)[:, None, None]
        return (images01 - mean) / std

    def denormalize(self, images: np.ndarray) -> np.ndarray:
        mean = np.array(self.mean, dtype=F32)[:, None, None]
        std = np.array(self.std, dtype=F32)[:, None, None]
        return images * std + mean


def consistency_filter(mean: np.ndarray, variance: np.ndarray) -> np.ndarray:
    """``scoring.consistency_filter``: keep the mean where the variance is strictly above
    its lower median."""
    flat = variance.reshape(-1)
    kth = (flat.size + 1) // 2 - 1
    median = np.partition(flat, kth)[kth]
    return np.where(variance > median, mean, F32(0.0)).astype(F32)


def smooth(amap: np.ndarray, sigma: float) -> np.ndarray:
    """``scoring.smooth``: a Gaussian of ``sigma`` pixels, on a shrunk frame when wide."""
    if sigma <= 0:
        return amap
    factor = max(1, int(sigma // SMOOTH_MAX_SIGMA))
    small = arrays.average_pool(amap, factor) if factor > 1 else amap
    sigma_small = sigma / factor
    radius = min(int(4 * sigma_small + 0.5), min(small.shape) - 1)
    if radius < 1:
        return amap
    blurred = arrays.gaussian_blur(small, 2 * radius + 1, sigma_small)
    return arrays.upsample(blurred, amap.shape)


def best_cosines(cells: np.ndarray, bank: np.ndarray, upright: int) -> tuple:
    """``scoring.best_cosines``: each ``[Q, C]`` cell's best cosine to the bank's upright
    rows and (for a turned bank) to all its rows, one cache-sized block of the similarity
    matrix at a time, reduced while it is still in the cache.

    The blocks are laid out for numpy rather than as torch's are: a few bank rows against
    many query cells (``SIMILARITY_BANK_ROWS`` x ``SIMILARITY_QUERY_ROWS``), each product
    written into one reused buffer and reduced down its columns, which numpy does with
    whole vectors at a time. The cosines, and so their maximum, are the same products."""
    best_upright = np.full(cells.shape[0], -np.inf, dtype=F32)
    best_any = best_upright.copy() if bank.shape[0] > upright else None
    for start in range(0, cells.shape[0], SIMILARITY_QUERY_ROWS):
        part = slice(start, start + SIMILARITY_QUERY_ROWS)
        columns = np.ascontiguousarray(cells[part].T, dtype=F32)  # [C, q]
        buffer = np.empty((SIMILARITY_BANK_ROWS, columns.shape[1]), dtype=F32)
        _fold_max(columns, bank[:upright], best_upright[part], buffer)
        if best_any is not None:
            best_any[part] = best_upright[part]
            _fold_max(columns, bank[upright:], best_any[part], buffer)
    return best_upright, best_any


def _fold_max(
    columns: np.ndarray, bank_rows: np.ndarray, best: np.ndarray, buffer: np.ndarray
) -> None:
    """``best`` (a view) raised in place to each query column's largest cosine with
    ``bank_rows``; ``buffer`` holds one block of products."""
    for start in range(0, bank_rows.shape[0], SIMILARITY_BANK_ROWS):
        rows = bank_rows[start : start + SIMILARITY_BANK_ROWS]
        block = buffer[: rows.shape[0]]
        np.matmul(rows, columns, out=block)
        np.maximum(best, block.max(axis=0), out=best)


def flat_cells(cells: np.ndarray) -> np.ndarray:
    """``[B, C, h, w]`` -> ``[B * h * w, C]`` (``scoring.flat_cells``)."""
    return cells.transpose(0, 2, 3, 1).reshape(-1, cells.shape[1])


def reference_maps(
    spec: ScoringSpec,
    query_cells: list[np.ndarray],
    banks: list[tuple[np.ndarray, int]],
    size: tuple[int, int],
) -> list[np.ndarray | None]:
    """Each mix's ``[H, W]`` reference distance (``FusedMetric.reference_maps``), from the
    query's unit cells per magnification (``[1, C, h, w]``) and the reference banks."""
    if spec.zoom == 0:
        return [None] * len(spec.mixes)
    distances: dict[tuple[int, bool], np.ndarray] = {}
    for level, (cells, (bank, upright)) in enumerate(zip(query_cells, banks, strict=True), 1):
        height, width = cells.shape[-2:]
        found = best_cosines(flat_cells(cells), bank, upright)
        for turned, best in zip((False, True), found, strict=True):
            if best is not None:
                distance = (F32(1.0) - best).reshape(height, width)
                distances[level, turned] = arrays.upsample(distance, size)
    maps: list[np.ndarray | None] = []
    for mix in spec.mixes:
        if mix.reference_weight <= 0:
            maps.append(None)
            continue
        levels = [distances[level, mix.turns] for level in range(1, mix.zoom + 1)]
        maps.append(np.stack(levels).mean(0) if len(levels) > 1 else levels[0])
    return maps


@dataclass
class QueryTargets:
    """What every pass of one query is compared with (``metric.target``)."""

    colour: np.ndarray | None  # [1, 3, H, W] blurred LAB (or RGB) of the query
    features: np.ndarray | None  # [1, M, F] the query's frozen CNN features
    references: list[np.ndarray | None]  # each mix's [H, W] reference distance


def colour_target(spec: ScoringSpec, query01: np.ndarray) -> np.ndarray:
    """``ColourMetric.target``: the blurred query in the metric's colour space."""
    converted = query01 if spec.metric == "rgb" else arrays.rgb_to_lab(query01)
    return arrays.gaussian_blur(converted, BLUR_KERNEL, BLUR_SIGMA)


def colour_errors(spec: ScoringSpec, target: np.ndarray, recon01: np.ndarray) -> np.ndarray:
    """``ColourMetric.errors``: ``[P, H, W]`` squared colour distances."""
    upsampled = np.clip(arrays.upsample(recon01, target.shape[-2:]), 0.0, 1.0)
    converted = upsampled if spec.metric == "rgb" else arrays.rgb_to_lab(upsampled)
    return np.square(target - converted).sum(axis=1)


def feature_errors(
    spec: ScoringSpec,
    target: np.ndarray,
    predicted: np.ndarray,
    weights: np.ndarray | None,
    size: tuple[int, int],
) -> np.ndarray:
    """``PredictedFeatureMetric.errors``: ``[P, H, W]`` per-cell feature errors."""
    cells = spec.cells_per_side
    squared = np.square(predicted - target)  # [P, M, C * cells * cells]
    per_cell = squared.reshape(*squared.shape[:2], -1, cells * cells).sum(axis=-2)
    if spec.score_masked_cells:
        if weights is None:
            raise ValueError("this model scores its hidden patches only: pass their weights.")
        per_cell = per_cell * weights[..., None].astype(F32)
    maps = arrays.unfold_from_patches(per_cell, cells, spec.grid_size)
    return arrays.upsample(maps, size)[:, 0]


def pass_errors(
    spec: ScoringSpec,
    targets: QueryTargets,
    recon01: np.ndarray,
    predicted: np.ndarray | None,
    weights: np.ndarray | None,
    size: tuple[int, int],
) -> np.ndarray:
    """``[P, jobs, H, W]`` errors of one chunk of passes (``metric.errors``)."""
    assert targets.colour is not None
    colour = colour_errors(spec, targets.colour, recon01)
    if spec.metric != "fused":
        return colour[:, None]
    if predicted is None or targets.features is None:
        raise ValueError("the fused metric needs predicted and target features.")
    feature = feature_errors(spec, targets.features, predicted, weights, size)
    mixed = []
    for mix, reference in zip(spec.mixes, targets.references, strict=True):
        lab_part = F32(mix.lab_weight / spec.scales[0] * spec.reconstruction_weight)
        feature_part = F32((1.0 - mix.lab_weight) / spec.scales[1] * spec.reconstruction_weight)
        errors = colour * lab_part + feature * feature_part
        if mix.reference_weight > 0:
            assert reference is not None
            errors = errors + F32(mix.reference_weight) * reference
        mixed.append(errors)
    return np.stack(mixed, axis=1)


@dataclass
class LineScore:
    """``scoring.ScoredQuery`` in numpy."""

    anomaly_map: np.ndarray
    score: float
    pass_mean: list[float]
    pass_max: list[float]


def score_passes(
    spec: ScoringSpec,
    targets: QueryTargets,
    recon01: np.ndarray,
    predicted: np.ndarray | None,
    weights: np.ndarray | None,
    size: tuple[int, int],
) -> LineScore:
    """``scoring.score_query``: passes folded in chunks with the exact pairwise mean and
    variance merge, then each job's readout; the score is the score map's maximum."""
    chunk = max(1, MAX_CHUNK_VALUES // (3 * size[0] * size[1]))
    count, mean, sq_dev = 0, None, None
    pass_mean: list[float] = []
    pass_max: list[float] = []
    for start in range(0, recon01.shape[0], chunk):
        part = slice(start, start + chunk)
        errors = pass_errors(
            spec,
            targets,
            recon01[part],
            None if predicted is None else predicted[part],
            None if weights is None else weights[part],
            size,
        ).astype(F32, copy=False)
        pass_mean += [float(v) for v in errors[:, 0].mean(axis=(1, 2))]
        pass_max += [float(v) for v in errors[:, 0].max(axis=(1, 2))]
        part_mean = errors.mean(axis=0)
        part_sq = np.square(errors - part_mean).sum(axis=0)
        if mean is None:
            count, mean, sq_dev = errors.shape[0], part_mean, part_sq
            continue
        total = count + errors.shape[0]
        delta = part_mean - mean
        mean = mean + delta * F32(errors.shape[0] / total)
        sq_dev = sq_dev + part_sq + np.square(delta) * F32(count * errors.shape[0] / total)
        count = total
    assert mean is not None and sq_dev is not None
    variance = sq_dev / F32(count)
    scale = max(size) / recon01.shape[-1]
    anomaly_map = spec.map_readout.apply(mean[0], variance[0], scale)
    same = mean.shape[0] == 1 and spec.score_readout == spec.map_readout
    score_map = anomaly_map if same else spec.score_readout.apply(mean[-1], variance[-1], scale)
    return LineScore(anomaly_map.astype(F32), float(score_map.max()), pass_mean, pass_max)


def score_distance(spec: ScoringSpec, references: list[np.ndarray | None]) -> LineScore:
    """``readout.score_without_passes`` for the ``distance`` metric."""
    size = references[0].shape if references[0] is not None else (0, 0)
    scale = max(size) / spec.img_size
    maps = [F32(mix.reference_weight) * d for mix, d in zip(spec.mixes, references, strict=True)]
    flat = np.zeros_like(maps[0])
    anomaly_map = spec.map_readout.apply(maps[0], flat, scale)
    score_map = spec.score_readout.apply(maps[-1], flat, scale)
    return LineScore(anomaly_map.astype(F32), float(score_map.max()), [], [])
