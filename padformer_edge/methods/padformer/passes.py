"""From a query and its per-pass reconstructions to an anomaly map and a score.

The metric that compares each pass with its query is handed in (``metrics.build_metric``
names them); this module hands its error maps, one per pass at the query's own
resolution, to ``readout.fold_passes``, which folds them and reads the map and the image
score from their mean and variance by each job's ``Readout``, exactly as the line's numpy
scoring does.
"""

from __future__ import annotations

import torch

from padformer_edge.detect.readout import ScoredQuery, fold_passes
from padformer_edge.methods.padformer.paper_metrics import ErrorMetric


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

    def errors_of(part: slice) -> torch.Tensor:
        part_features = None if features is None else features[part]
        part_weights = None if weights is None else weights[part]
        return metric.errors(target, recon01[part], size, part_features, part_weights)

    return fold_passes(metric, errors_of, recon01.shape[0], size, recon01.shape[-1])
