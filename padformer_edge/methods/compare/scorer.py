"""Images to the comparator's maps: reference cells once per reference set, queries in
batches, each query's per-cell scores read at their cells' size by the readout every
score of this project uses (``methods.compare.reading``: smooth, maximum).

The references are squeezed square like every input and matched upright and turned by
quarter turns (a part seen from any side is seen at any roll), exactly as the distance's
bank (``methods.padformer.distance_search.reference_banks``) is built, so with the
correction at zero the comparator's score is the distance alone.

``CompareMetric`` is the ``compare`` method's metric: a shipped comparator (the default,
or the one a profile records: ``weights.locate_comparator``) read like the ``distance``
metric, with no reconstruction pass, by ``methods.compare.detector.CompareDetector``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from padformer_edge.detect.array_ops import QUARTER_TURNS, turned_bank
from padformer_edge.detect.images import resize_square
from padformer_edge.detect.readout import Readout
from padformer_edge.detect.signature import Signature, readout_jobs
from padformer_edge.methods.compare.model import Comparison, ComparisonModel

SCORE_SIGMA = 2.0  # model pixels: the shipped generic model's image-score smoothing
SELECTION_BATCH = 16  # images per comparator call when choosing references


@dataclass(frozen=True)
class ReferenceCells:
    """The references' unit cells: upright ``[1, N, C, h, w]`` (what the STN aligns) and
    every cell to match against, upright then turned, ``[1, R, C]``."""

    upright: torch.Tensor
    bank: torch.Tensor


def squares(model: ComparisonModel, images01: list[torch.Tensor]) -> torch.Tensor:
    """``[B, 3, S, S]``: each ``[3, H, W]`` image in [0, 1] squeezed to the input size."""
    size = model.config.input_size
    return torch.cat([resize_square(image.unsqueeze(0), size) for image in images01])


def reference_cells(model: ComparisonModel, references01: list[torch.Tensor]) -> ReferenceCells:
    """Cells of the references, upright and turned, computed once per reference set
    (``array_ops.turned_bank``, as the line's bank is)."""
    upright_squares = squares(model, references01)
    upright = model.cells(upright_squares)
    rows, _ = turned_bank(model.cells, upright_squares, QUARTER_TURNS, upright)
    return ReferenceCells(upright.unsqueeze(0), rows.unsqueeze(0))


def compare(
    model: ComparisonModel, queries01: list[torch.Tensor], references: ReferenceCells
) -> Comparison:
    """The comparator's per-cell outputs for a batch of queries against one reference set."""
    with torch.no_grad():
        cells = model.cells(squares(model, queries01))
        return model(cells, references.upright, references.bank)


class CompareMetric:
    """The ``compare`` metric: per cell, the nearest-reference distance plus the shipped
    comparator's learned correction, read plainly at the cells' size (no passes, so no
    variance to filter by) with ``SCORE_SIGMA``'s smoothing for both jobs.

    ``sha256`` names the comparator's weights: the scoring signature carries it, so a
    threshold calibrated with one comparator is not used with another.
    """

    reads_passes = False

    def __init__(
        self, model: ComparisonModel, sha256: str, references01: list[torch.Tensor] | None
    ) -> None:
        self.comparison, self.sha256 = model.eval(), sha256
        self.input_size = model.config.input_size
        self.map_readout = self.score_readout = Readout(consistency_filter=False, sigma=SCORE_SIGMA)
        self.references = (
            None
            if references01 is None
            else reference_cells(model, [image.to(self.device) for image in references01])
        )

    @property
    def device(self) -> torch.device:
        return self.comparison.mean.device

    def batch_cells(self, queries01: list[torch.Tensor]) -> torch.Tensor:
        """``[B, h, w]`` per-cell scores of every query of one detector call
        (``[1, 3, H, W]`` in [0, 1] each), compared in one comparator call: the comparator
        reads each query with the same weights and no cross-query term, so a batch
        changes at most the rounding (``compare`` batches the same way). They are read at
        their cells' size and carried there (``reading.cell_detections``): only what shows
        a map resizes it, once (``detect.map_geometry.frame_map``)."""
        assert self.references is not None, "built without references: a signature only"
        queries = [query[0].to(self.device) for query in queries01]
        return compare(self.comparison, queries, self.references).score.float()


def compare_signature(metric: CompareMetric) -> Signature:
    """How ``metric`` computes its scores: the readouts and the comparator's sha256 (its
    weights set the scores), in the form ``detect.signature`` gives every metric."""
    jobs = readout_jobs(metric.map_readout, metric.score_readout)
    return {"metric": "compare", **jobs, "hidden_patches_only": False, "comparator": metric.sha256}


def load_compare_metric(
    device: torch.device, references01: list[torch.Tensor] | None, sha256: str | None = None
) -> CompareMetric:
    """The ``compare`` metric on the shipped comparator of ``sha256`` (None: the default),
    checked against its card (so the card's sha256 is the file's)."""
    from padformer_edge.methods.compare.checkpoint import shared_comparator
    from padformer_edge.weights import comparator_sha256, locate_comparator

    path = locate_comparator(sha256)
    model = shared_comparator(path, str(device))
    verified = comparator_sha256(path)
    assert verified is not None, "locate_comparator checked the card"
    return CompareMetric(model, verified, references01)


@torch.inference_mode()
def pooled_cells(
    images: Sequence[np.ndarray], sha256: str | None, device: torch.device
) -> torch.Tensor:
    """``[K, C]`` the comparator's unit cells of each whole image, averaged over the image:
    the features ``profiles.selection`` chooses a ``compare`` profile's references by
    (pooling drops where the part sits in the frame and keeps what is seen)."""
    from padformer_edge.detect.images import to_unit_tensor

    metric = load_compare_metric(device, None, sha256)
    out = []
    for start in range(0, len(images), SELECTION_BATCH):
        batch = [to_unit_tensor(image, device) for image in images[start : start + SELECTION_BATCH]]
        cells = metric.comparison.cells(squares(metric.comparison, batch))
        out.append(cells.float().mean(dim=(2, 3)).cpu())
    return torch.cat(out)
