"""The simplest few-shot baseline: compare the query with its most similar reference.

The reference closest to the query in mean CIELAB distance stands in for "what this view
should look like", and the per-pixel CIELAB distance (delta E) to it is the anomaly map.
Both images get the detector's Gaussian smoothing first so that sensor noise and
resampling do not count as defects. It shows how much a learned, pose-aware
reconstruction adds over plain image differencing with the same references.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import kornia
import numpy as np
import torch

from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.readout_constants import BLUR_SIGMA
from padformer_edge_training.evaluation.scorers import Scored


class ReferenceDifferenceScorer:
    name = "reference difference (LAB)"

    def __init__(self, sigma: float = BLUR_SIGMA) -> None:
        """``sigma``: the Gaussian smoothing of both images, the detector's by default; a
        wider one forgives small misalignments between a view and its nearest reference."""
        self.sigma = sigma
        self.references: list[np.ndarray] = []
        self._lab: dict[tuple[int, int], torch.Tensor] = {}

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        self.references, self._lab = list(references), {}

    def lab(self, images: torch.Tensor) -> torch.Tensor:
        kernel = 2 * int(3 * self.sigma + 0.5) + 1
        smooth = kornia.filters.gaussian_blur2d(
            images, (kernel, kernel), (self.sigma, self.sigma), border_type="reflect"
        )
        return kornia.color.rgb_to_lab(smooth)

    def references_lab(self, size: tuple[int, int]) -> torch.Tensor:
        """The references in LAB at a query's size, converted once per size."""
        if size not in self._lab:
            refs = torch.stack([to_unit_tensor(r, torch.device("cpu")) for r in self.references])
            if refs.shape[-2:] != size:
                refs = torch.nn.functional.interpolate(
                    refs, size=size, mode="bilinear", antialias=True, align_corners=False
                ).clamp_(0, 1)
            self._lab[size] = self.lab(refs)
        return self._lab[size]

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        results = []
        for query in queries:
            size = query.shape[:2]
            refs = self.references_lab(size)
            distance = self.lab(to_unit_tensor(query, torch.device("cpu"))[None]) - refs
            delta_e = distance.square().sum(dim=1).sqrt()  # [N, H, W]
            nearest = int(delta_e.mean(dim=(1, 2)).argmin())
            reference = cv2.resize(self.references[nearest], (size[1], size[0]), cv2.INTER_AREA)
            amap = delta_e[nearest].numpy()
            results.append(Scored(float(amap.max()), amap, reference))
        return results
