"""The ``compare`` readout written out plainly, apart from ``detect.readout``: the oracle
the comparator tests hold the detector's maps and scores to."""

from __future__ import annotations

import torch

from padformer_edge.detect.readout import smooth
from padformer_edge.detect.tensor_ops import upsample
from padformer_edge.methods.compare.scorer import SCORE_SIGMA


def read_score(cell_scores: torch.Tensor, size: tuple[int, int], input_size: int) -> torch.Tensor:
    """``[h, w]`` per-cell scores -> the ``[H, W]`` map at the query's size, smoothed by
    ``SCORE_SIGMA`` model pixels; its maximum is the image score."""
    scale = max(size) / input_size  # query pixels per model pixel
    return smooth(upsample(cell_scores[None, None], size)[0, 0], SCORE_SIGMA * scale)
