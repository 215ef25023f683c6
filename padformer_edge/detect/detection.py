"""The result of detecting one image, in a module without torch.

Both runtimes return it: the torch ``Detector`` and the line's numpy ``LineDetector``
(``deploy.line_detector``), so the daemon and the CLI handle results without importing
the runtime that made them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Detection:
    """The result for one query image.

    ``anomaly_map`` has the query's own ``H x W`` (float32, 0 where filtered out);
    ``pass_mean_error`` / ``pass_max_error`` summarise each pass's raw error map;
    ``timings`` are seconds: ``prepare`` (tensor conversion and resize), ``reconstruct``
    (this query's share of the batched model calls), ``score`` and ``total``.
    ``reconstruction`` is the mean over passes of what the model drew (``S x S x 3``
    ``uint8`` at the model's size), kept only when asked for: evaluation reports show it.
    """

    score: float
    anomaly_map: np.ndarray
    pass_mean_error: list[float]
    pass_max_error: list[float]
    timings: dict[str, float] = field(default_factory=dict)
    reconstruction: np.ndarray | None = None
