"""Per-query scoring in numpy: the torch detector's ``score_query`` for the line runtime.

Neither the metric's settings nor its arithmetic are decided here. The exporter resolves
the settings with the torch metric (``line_export.scoring_record``) and stores them in
the profile; the arithmetic is the torch detector's own, written once for both array
kinds (``errors``, ``mix``, ``detect.readout``); this module reads the record and
hands the graphs' arrays over. So the model's validated weights, zooms and readouts have
one source, and a profile scores on the line with exactly the settings and steps it was
calibrated with. Only the metrics a line runs are here: the paper's ``lab`` (and
``rgb``), ``fused`` and ``distance``; the encoder ``feature`` error of pixel models is
refused at export.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from padformer_edge.detect.numpy_ops import F32
from padformer_edge.detect.readout import Readout, ScoredQuery, fold_passes
from padformer_edge.methods.padformer import errors
from padformer_edge.methods.padformer.errors import ColourSpace
from padformer_edge.methods.padformer.mix import Mix, mix_jobs


@dataclass(frozen=True)
class ScoringSpec:
    """Everything the numpy scoring needs, as the exporter recorded it (``scoring.json``)."""

    metric: str
    signature: dict[str, Any]
    map_readout: Readout
    score_readout: Readout
    mixes: tuple[Mix, ...]
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
            map_readout=Readout(**record["map_readout"]),
            score_readout=Readout(**record["score_readout"]),
            mixes=tuple(Mix(**mix) for mix in record["mixes"]),
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
    def colour_space(self) -> ColourSpace:
        """The colour error's space: RGB for the ablation, else the paper's LAB."""
        return "rgb" if self.metric == "rgb" else "lab"

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
    return errors.colour_target(query01, spec.colour_space)


def pass_errors(
    spec: ScoringSpec,
    targets: QueryTargets,
    recon01: np.ndarray,
    predicted: np.ndarray | None,
    weights: np.ndarray | None,
    size: tuple[int, int],
) -> np.ndarray:
    """``[P, H, W]`` (or ``[P, jobs, H, W]``) errors of one chunk of passes
    (``metric.errors``)."""
    assert targets.colour is not None
    colour = errors.colour_errors(targets.colour, recon01, size, spec.colour_space)
    if spec.metric != "fused":
        return colour
    if predicted is None or targets.features is None:
        raise ValueError("the fused metric needs predicted and target features.")
    feature = errors.feature_errors(
        targets.features,
        predicted,
        weights,
        size,
        spec.cells_per_side,
        spec.grid_size,
        spec.score_masked_cells,
    )
    return mix_jobs(
        colour, feature, spec.scales, spec.mixes, targets.references, spec.reconstruction_weight
    )


def score_passes(
    spec: ScoringSpec,
    targets: QueryTargets,
    recon01: np.ndarray,
    predicted: np.ndarray | None,
    weights: np.ndarray | None,
    size: tuple[int, int],
) -> ScoredQuery:
    """``passes.score_query`` in numpy: this metric's errors, folded and read by the
    readout torch shares (``readout.fold_passes``)."""

    def errors_of(part: slice) -> np.ndarray:
        made = pass_errors(
            spec,
            targets,
            recon01[part],
            None if predicted is None else predicted[part],
            None if weights is None else weights[part],
            size,
        )
        return made.astype(F32, copy=False)

    scored = fold_passes(spec, errors_of, recon01.shape[0], size, recon01.shape[-1])
    scored.anomaly_map = scored.anomaly_map.astype(F32, copy=False)
    return scored
