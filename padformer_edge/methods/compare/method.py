"""The ``compare`` method as the registry calls it: every call imports what it runs, so
naming the method loads no torch (a line install builds its line detector from here)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from padformer_edge.methods.compare.settings import CompareSettings

if TYPE_CHECKING:
    import numpy as np
    import torch

    from padformer_edge.detect.detection import InspectionDetector
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.methods.interface import GraphOpener, PadformerSource, ReferenceSlot


class CompareMethod:
    """The learned comparison, the product's default: per cell, the distance of a query's
    comparator cells to the nearest cell of the references (upright and turned by quarter
    turns) plus the comparator's learned correction, read with no reconstruction pass. It
    reads the shipped comparator whose sha256 the profile records (``doctor`` names a
    profile on an earlier one), never the profile's PADFormer checkpoint; the references'
    cells are computed when the detector is built. On a line it runs two exported graphs
    (the comparator's CNN, the comparison) in onnxruntime or OpenVINO with no torch.
    References are chosen in the comparator's pooled cells."""

    name = "compare"
    metrics = ("compare",)
    reads_padformer = False
    settings_type = CompareSettings

    def settled(self, settings: DetectionSettings) -> DetectionSettings:
        """The comparator named by its sha256 (the shipped default unless one is named),
        so that a later default leaves the profile's scores as they were."""
        from padformer_edge.weights import comparator_sha256, locate_comparator

        path = locate_comparator(settings.section.comparator)  # checked against its card
        return settings.replace(comparator=comparator_sha256(path))

    def torch_detector(
        self,
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
        *,
        cache: ReferenceSlot | None = None,
        open_graphs: GraphOpener | None = None,
    ) -> InspectionDetector:
        from padformer_edge.methods.compare.cells_cache import CellsCacheFile
        from padformer_edge.methods.compare.detector import CompareDetector

        store = None if cache is None else CellsCacheFile(cache.path, cache.reference_sha256s)
        return CompareDetector(references, settings, cells=store)

    def line_detector(
        self,
        folder: Path,
        files: dict[str, str],
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        *,
        fix: str,
        cache: ReferenceSlot | None,
        threads: int,
    ) -> InspectionDetector:
        from padformer_edge.methods.compare.line import LineCompareDetector

        return LineCompareDetector(folder, files, references, settings, fix=fix, threads=threads)

    def export(
        self, settings: DetectionSettings, out: Path, padformer: PadformerSource
    ) -> dict[str, str]:
        from padformer_edge.methods.compare.export import export_comparator

        return export_comparator(settings, out)

    def signature(self, settings: DetectionSettings, padformer: PadformerSource) -> dict[str, Any]:
        import torch

        from padformer_edge.methods.compare.scorer import compare_signature, load_compare_metric

        metric = load_compare_metric(torch.device("cpu"), None, settings.section.comparator)
        return compare_signature(metric)

    def selection_features(
        self,
        images: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
    ) -> torch.Tensor:
        import torch

        from padformer_edge.methods.compare.scorer import pooled_cells

        return pooled_cells(images, settings.section.comparator, torch.device("cpu"))

    def weights_checked(self, settings: DetectionSettings) -> str:
        from padformer_edge.weights import locate_comparator

        return f"comparator {locate_comparator(settings.section.comparator)} matches its card"

    def weights_name(self, settings: DetectionSettings) -> str:
        from padformer_edge.weights import locate_comparator, read_card

        path = locate_comparator(settings.section.comparator)  # checked once per process
        return str(read_card(path).get("name", path.stem))


COMPARE = CompareMethod()
