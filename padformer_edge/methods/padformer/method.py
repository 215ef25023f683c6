"""PADFormer's metrics as the registry calls them: the profile's checkpoint is loaded
(through the ``padformer`` source the caller hands in) only by the calls that score,
export or choose with it; naming the method loads no torch. The ``fused`` and
``distance`` methods are this one with their own metric (``methods.padformer.fused_method``,
``methods.padformer.distance_method``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from padformer_edge.methods.padformer.settings import PadformerSettings

if TYPE_CHECKING:
    import numpy as np
    import torch

    from padformer_edge.detect.detection import InspectionDetector
    from padformer_edge.detect.settings import DetectionSettings, MethodSettings
    from padformer_edge.methods.interface import GraphOpener, PadformerSource, ReferenceSlot


class PadformerMethod:
    """PADFormer's reconstruction scores: the paper's colour (``lab``, ``rgb``) and
    ``feature`` errors over masked reconstruction passes; ``auto`` is the ``fused`` method's
    metric for models with CNN tokens, else ``lab``. It reads the profile's checkpoint,
    verified against its sha256, and keeps the references' encodings in the profile's
    cache file. On a line it runs the exported encoder and decoder graphs; the ``feature``
    metric has no line runtime. References are chosen in PADFormer's pooled encoder
    features. The ``fused`` and ``distance`` methods run on the same detector and graphs
    with their own metric."""

    name: str = "padformer"
    metrics: tuple[str, ...] = ("auto", "lab", "rgb", "feature")
    reads_padformer = True
    settings_type: type[MethodSettings] = PadformerSettings

    def settled(self, settings: DetectionSettings) -> DetectionSettings:
        """``settings`` as they are: PADFormer's weights are the profile's checkpoint."""
        return settings

    def torch_detector(
        self,
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
        *,
        cache: ReferenceSlot | None = None,
        open_graphs: GraphOpener | None = None,
    ) -> InspectionDetector:
        from padformer_edge.methods.padformer.detector import Detector
        from padformer_edge.methods.padformer.reference_cache import ReferenceCacheFile

        encodings = None
        if cache is not None:  # PADFormer's encodings of the references
            encodings = ReferenceCacheFile(cache.path, encodings_key(cache, settings))
        model = padformer()
        runner = None if open_graphs is None else open_graphs(model)
        return Detector(model, references, settings, encodings=encodings, runner=runner)

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
        from padformer_edge.methods.padformer.line_detector import LineDetector

        stored = None if cache is None else (cache.path, encodings_key(cache, settings))
        return LineDetector(
            folder, files, references, settings, fix=fix, cache=stored, threads=threads
        )

    def export(
        self, settings: DetectionSettings, out: Path, padformer: PadformerSource
    ) -> dict[str, str]:
        from padformer_edge.methods.padformer.line_export import export_line

        return export_line(padformer(), settings, out)

    def signature(self, settings: DetectionSettings, padformer: PadformerSource) -> dict[str, Any]:
        from padformer_edge.methods.padformer.metrics import resolve_metric, scoring_signature

        scoring = settings.section.scoring
        return scoring_signature(*resolve_metric(settings.metric, padformer(), None, scoring))

    def selection_features(
        self,
        images: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
    ) -> torch.Tensor:
        from padformer_edge.methods.padformer.features import pooled_features

        return pooled_features(padformer(), images)

    def weights_checked(self, settings: DetectionSettings) -> str:
        return ""

    def weights_name(self, settings: DetectionSettings) -> str:
        return ""  # its weights are the profile's checkpoint: never asked


def encodings_key(cache: ReferenceSlot, settings: DetectionSettings) -> str:
    """The key of PADFormer's cached encodings: the checkpoint, the references and the
    precision they were encoded in (``deploy.cache_files.cache_key``)."""
    from padformer_edge.deploy.cache_files import cache_key

    return cache_key(cache.model_sha256, cache.reference_sha256s, settings.precision)


PADFORMER = PadformerMethod()
