"""The interface every evaluated method implements, and PADFormer behind it.

A scorer is told its references once per reference set (``prepare``) and then scores
batches of queries, so that each method can cache what it derives from the references,
as it would on a line: PADFormer its encoded reference tokens, PatchCore its memory bank.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from padformer_edge.detect import Detector
from padformer_edge.detect.images import to_unit_tensor
from padformer_edge.detect.scoring import score_query
from padformer_edge.model import PADFormer


@dataclass
class Scored:
    """One query's image score, its ``H x W`` anomaly map and, when the method has one,
    the image it compared the query with (a reconstruction or the chosen reference)."""

    score: float
    anomaly_map: np.ndarray
    comparison: np.ndarray | None = None


class Scorer(Protocol):
    name: str

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        """Take the good references (RGB ``uint8``) that the next queries are judged by."""
        ...

    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        """Score RGB ``uint8`` queries; maps come back at each query's resolution."""
        ...


def to_uint8(image01: torch.Tensor) -> np.ndarray:
    """``[3, H, W]`` in [0, 1] as an ``H x W x 3`` ``uint8`` array."""
    return (image01.clamp(0, 1) * 255).round().byte().permute(1, 2, 0).cpu().numpy()


class PADFormerScorer:
    """Multi-pass detection through ``Detector`` (cached references, batched passes).

    ``Detector.detect`` keeps only scores and maps; evaluation also wants to show what
    the model drew, so the same three steps (fit, batched reconstruction, scoring) are
    run here and the mean reconstruction over passes is kept.
    """

    def __init__(
        self,
        model: PADFormer,
        name: str = "PADFormer",
        passes: int = 15,
        metric: str = "auto",
        seed: int = 0,
        device: str = "cpu",
        max_batch: int = 32,
    ) -> None:
        self.model, self.name = model, name
        self.options = dict(passes=passes, metric=metric, seed=seed, device=device)
        self.max_batch = max_batch
        self.detector: Detector | None = None

    def prepare(self, references: Sequence[np.ndarray]) -> None:
        self.detector = Detector(self.model, references, max_batch=self.max_batch, **self.options)

    @torch.inference_mode()
    def score(self, queries: Sequence[np.ndarray]) -> list[Scored]:
        detector = self.detector
        assert detector is not None, "prepare() comes first"
        full = [to_unit_tensor(q, detector.device).unsqueeze(0) for q in queries]
        model_in = torch.cat([detector.fit(q) for q in full])
        size = detector.img_size
        pixels, features = detector.reconstruct(model_in)
        recon = pixels.view(len(queries), detector.passes, 3, size, size)
        if features is not None:
            features = features.view(len(queries), detector.passes, *features.shape[1:])
        results = []
        for index, query in enumerate(full):
            scored = score_query(
                detector.metric,
                query,
                model_in[index : index + 1],
                recon[index],
                None if features is None else features[index],
            )
            results.append(
                Scored(
                    scored.score,
                    scored.anomaly_map.float().cpu().numpy(),
                    to_uint8(recon[index].mean(dim=0)),
                )
            )
        return results
