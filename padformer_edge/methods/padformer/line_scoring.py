"""Per-query scoring in numpy: the torch detector's ``score_query`` for the line runtime.

The metric's settings are not decided here: the exporter resolves them with the torch
metric (``line_export.scoring_record``) and stores them in the profile, and this
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
from padformer_edge.deploy.line_readout import F32, LineReadout, LineScore
from padformer_edge.detect.scoring_config import BLUR_KERNEL, BLUR_SIGMA, MAX_CHUNK_VALUES
from padformer_edge.methods.fused.line import LineMix, mix_errors


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
    return mix_errors(
        colour, feature, spec.scales, spec.mixes, targets.references, spec.reconstruction_weight
    )


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


