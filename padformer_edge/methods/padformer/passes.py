"""From a query and its per-pass reconstructions to an anomaly map and a score.

The metric that compares each pass with its query is handed in (``metrics.build_metric``
names them); this module only folds the passes. Each pass gives an error map
at the query's own resolution; the map and the image score are read from the passes' mean
and variance by each job's ``Readout``. Passes are folded in chunks with an exact pairwise
mean/variance merge, so a 20 MP camera frame never needs all passes' colour maps in
memory at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from padformer_edge.detect.readout import ScoredQuery
from padformer_edge.detect.scoring_config import MAX_CHUNK_VALUES
from padformer_edge.methods.padformer.paper_metrics import ErrorMetric


@dataclass
class PassMoments:
    """Running count, mean and sum of squared deviations of error maps over passes."""

    count: int
    mean: torch.Tensor
    sq_dev: torch.Tensor

    @classmethod
    def of(cls, errors: torch.Tensor) -> PassMoments:
        mean = errors.mean(dim=0)
        return cls(errors.shape[0], mean, (errors - mean).square_().sum(dim=0))

    def merge(self, other: PassMoments) -> PassMoments:
        """Exact combination of two disjoint groups of passes (Chan et al.)."""
        count = self.count + other.count
        delta = other.mean - self.mean
        mean = self.mean + delta * (other.count / count)
        sq_dev = self.sq_dev + other.sq_dev + delta.square() * (self.count * other.count / count)
        return PassMoments(count, mean, sq_dev)

    @property
    def variance(self) -> torch.Tensor:
        """Population variance (divide by the number of passes), as the paper defines it."""
        return self.sq_dev / self.count


def call_inputs(
    metric: ErrorMetric, queries01: list[torch.Tensor], queries_model: torch.Tensor
) -> list | None:
    """What ``metric`` reads once per query, for all queries of one detector call at once
    where it can (the reference search in one go on CUDA, the comparator over the batch):
    each query's maps for a metric without passes, its ``target`` for the fused one; None
    for a metric that reads queries one by one."""
    if getattr(metric, "reads_passes", True):
        targets = getattr(metric, "targets", None)
        return None if targets is None else targets(queries01, queries_model)
    return metric.batch_maps(queries01, queries_model)  # type: ignore[union-attr]


def score_query(
    metric: ErrorMetric,
    query01: torch.Tensor,
    query_model: torch.Tensor,
    recon01: torch.Tensor,
    features: torch.Tensor | None = None,
    weights: torch.Tensor | None = None,
    target: object = None,
) -> ScoredQuery:
    """Score one query (``[1, 3, H, W]`` in [0, 1]) against its ``[P, 3, S, S]`` passes
    (and, for models with CNN tokens, their ``[P, M, F]`` predicted features and the
    ``[P, M]`` weights of their patches' errors, ``masks.hidden_weights``); ``S`` is the
    model's input size, which sets the readouts' pixel scale. ``target`` is the metric's
    target when ``call_inputs`` already made it."""
    size = (query01.shape[-2], query01.shape[-1])
    target = metric.target(query01, query_model) if target is None else target
    chunk = max(1, MAX_CHUNK_VALUES // (3 * size[0] * size[1]))
    moments: PassMoments | None = None
    pass_mean: list[float] = []
    pass_max: list[float] = []
    for start in range(0, recon01.shape[0], chunk):
        part = slice(start, start + chunk)
        part_features = None if features is None else features[part]
        part_weights = None if weights is None else weights[part]
        errors = metric.errors(target, recon01[part], size, part_features, part_weights)
        errors = errors if errors.ndim == 4 else errors.unsqueeze(1)  # [P, map(, score), H, W]
        pass_mean += errors[:, 0].mean(dim=(1, 2)).tolist()
        pass_max += errors[:, 0].amax(dim=(1, 2)).tolist()
        folded = PassMoments.of(errors)
        moments = folded if moments is None else moments.merge(folded)
    assert moments is not None  # recon01 always holds at least two passes
    scale = max(size) / recon01.shape[-1]  # query pixels per model pixel
    anomaly_map = metric.map_readout.apply(moments.mean[0], moments.variance[0], scale)
    # one mix read one way (the paper's metrics) is one map: filter a 20 MP frame once
    same = moments.mean.shape[0] == 1 and metric.score_readout == metric.map_readout
    score_map = (
        anomaly_map
        if same
        else metric.score_readout.apply(moments.mean[-1], moments.variance[-1], scale)
    )
    return ScoredQuery(anomaly_map, float(score_map.max()), pass_mean, pass_max)
