"""The paper's error metrics, and how one job reads the passes of an error map.

Each pass ``i`` gives an error map ``E_i`` at the query's own resolution. The paper keeps
the mean error over passes only where the variance over passes is above its median:
errors that every mask pattern reproduces are systematic (blur, texture the model cannot
render) rather than anomalies, while an anomaly is only wrong when its patch was hidden.
The image score is the maximum of that map (``readout.PAPER_READOUT``). The colour metrics (LAB,
the paper's choice, and RGB for the ablation) and the feature metrics (encoder features of
pixel models, the decoder's predicted CNN features of edge models) are here, their
arithmetic in ``errors`` (which the line's numpy scoring shares); the ``fused`` mix of
them is ``fused_metric``, the nearest-reference distance ``distance_metric``.
"""

from __future__ import annotations

from typing import Protocol

import torch

from padformer_edge.detect.readout import PAPER_READOUT, Readout
from padformer_edge.detect.tensor_ops import upsample
from padformer_edge.methods.padformer.errors import (
    ColourSpace,
    colour_errors,
    colour_target,
    feature_errors,
)
from padformer_edge.model.padformer import PADFormer


class ErrorMetric(Protocol):
    """A way to compare reconstructions with their query, one error map per pass, and
    how the map and the image score read the passes (``PAPER_READOUT`` unless validated
    otherwise)."""

    map_readout: Readout
    score_readout: Readout

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        """What every pass is compared with; computed once per query."""
        ...

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``[P, H, W]`` errors of ``P`` reconstructions (``[P, 3, S, S]`` in ``[0, 1]``,
        and for models with CNN tokens their predicted ``[P, M, F]`` features and the
        ``[P, M]`` weight of each pass's error at each patch, ``masks.hidden_weights``,
        for a model that scores hidden patches only); or
        ``[P, 2, H, W]``, the second channel being the errors the image score is taken
        from, for a metric that ranks images with another mix than it draws maps with."""
        ...


class ColourMetric:
    """Squared distance in a colour space, between the blurred query and each upsampled
    reconstruction (``lab``: CIELAB through kornia, the paper's choice; ``rgb``: the same
    with no colour conversion, for the metric ablation)."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, space: ColourSpace) -> None:
        self.space = space

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return colour_target(query01, self.space)

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        return colour_errors(target, recon01, size, self.space)


class FeatureMetric:
    """Squared distance between encoder patch features of the query and of each
    reconstruction, upsampled bilinearly from the patch grid to the query resolution
    (the paper's feature error, with the from-scratch encoder of pixel models)."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, model: PADFormer) -> None:
        self.model = model

    def features(self, images_model: torch.Tensor) -> torch.Tensor:
        feats = self.model.encode_features(images_model).float()
        grid = self.model.config.grid_size
        return feats.transpose(1, 2).reshape(feats.shape[0], feats.shape[2], grid, grid)

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return self.features(query_model)

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        distance = (self.features(self.model.normalize(recon01)) - target).square_().sum(1)
        return upsample(distance.unsqueeze(1), size).squeeze(1)


class PredictedFeatureMetric:
    """Squared distance between the query's frozen CNN features and the decoder's
    prediction of them, per stride-8 cell, upsampled to the query resolution: the feature
    error of models with CNN tokens, whose ImageNet features see texture and shape."""

    map_readout = score_readout = PAPER_READOUT

    def __init__(self, model: PADFormer) -> None:
        self.model = model

    def target(self, query01: torch.Tensor, query_model: torch.Tensor) -> torch.Tensor:
        return self.model.target_features(query_model).float()

    def errors(
        self,
        target: torch.Tensor,
        recon01: torch.Tensor,
        size: tuple[int, int],
        features: torch.Tensor | None = None,
        weights: torch.Tensor | None = None,
    ) -> torch.Tensor:
        if features is None:
            raise ValueError("the feature error of a CNN-token model needs predicted features.")
        cfg = self.model.config
        return feature_errors(
            target,
            features,
            weights,
            size,
            cfg.cells_per_side,
            cfg.grid_size,
            cfg.score_masked_cells,
        )
