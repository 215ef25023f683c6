"""The ``compare`` method's torch detector: the shipped comparator and the references'
cells, and nothing of PADFormer.

The learned comparison reads its own frozen CNN, so a profile on it needs no PADFormer
checkpoint loaded, no pass masks and no reference encodings: building one is loading a
1 MB comparator and the references' cells (from the profile's cache file when it holds
them). Its images go through the same steps
the PADFormer ``Detector`` once took them through for this metric (checked, made [0, 1]
tensors, compared in one comparator call, read out one by one, at the cells' size, by
``reading.cell_detections``, as the line reads them).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from padformer_edge.detect.detection import Detection, GroupedDetection
from padformer_edge.detect.device import check_precision, detection_device, synchronize
from padformer_edge.detect.images import check_queries, check_references, to_unit_tensor
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.detect.signature import Signature
from padformer_edge.devices.allocator import retain_freed_memory
from padformer_edge.methods.compare.cells_cache import CellsCacheFile
from padformer_edge.methods.compare.reading import detect_cells
from padformer_edge.methods.compare.scorer import (
    compare_signature,
    load_compare_metric,
    reference_cells,
)


class CompareDetector(GroupedDetection):
    """Scores query images with the comparator ``settings.comparator`` names (None: the
    shipped default) against ``references``. With a ``cells`` file (a profile's) the
    references' cells are read from it when it holds them for this comparator and these
    references (``cache_hit`` is then True), and written to it otherwise.

    ``images_per_call`` keeps the grouping the PADFormer detector used for this metric
    (``max_batch // passes`` images), so ``detect_each`` groups images as before and a
    score's rounding does not move; the daemon sets its own batch through ``detect``.
    """

    reads_passes = False

    def __init__(
        self,
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        *,
        cells: CellsCacheFile | None = None,
    ) -> None:
        retain_freed_memory()  # every call frees tens of MB that the next one needs again
        self.settings = settings
        # on a graph runtime (``detect --runtime``) the comparator runs in torch on the CPU,
        # as it always has there; a profile's line runs its exported graphs instead
        onnx = settings.runtime != "torch"
        self.device = detection_device("cpu" if onnx else settings.device)
        check_precision(settings.precision, self.device)
        self.passes, self.max_batch = settings.passes, settings.max_batch
        check_references(references)
        self.metric = load_compare_metric(self.device, None, settings.section.comparator)
        self.metric_name = "compare"
        stored = None if cells is None else cells.load(self.metric.sha256, self.device)
        self.cache_hit = stored is not None
        if stored is None:
            with torch.inference_mode():
                references01 = [to_unit_tensor(image, self.device) for image in references]
                stored = reference_cells(self.metric.comparison, references01)
            if cells is not None:
                cells.save(self.metric.sha256, stored)
        self.metric.references = stored

    @property
    def scoring(self) -> Signature:
        """How this detector's scores are computed (``scorer.compare_signature``)."""
        return compare_signature(self.metric)

    @property
    def images_per_call(self) -> int:
        return max(1, self.max_batch // self.passes)

    @torch.inference_mode()
    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Score every image (RGB ``uint8``, any size); one ``Detection`` per image.
        ``reconstruction`` is accepted and ignored: nothing is reconstructed."""
        if len(images) == 0:
            return []
        check_queries(images)

        def prepare(found: Sequence[np.ndarray]) -> list[torch.Tensor]:
            return [to_unit_tensor(image, self.device).unsqueeze(0) for image in found]

        return detect_cells(
            self.metric,
            images,
            prepare,
            self.metric.batch_cells,
            self.metric.input_size,
            lambda: synchronize(self.device),
        )
