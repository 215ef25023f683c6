"""What every scoring method answers (``ScoringMethod``), and the two loaders a caller
hands a method: its own module, so each method and the registry name it without
importing one another round.

Naming these loads neither torch nor a runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np
    import torch

    from padformer_edge.deploy.graph_runner import GraphRunner
    from padformer_edge.detect.detection import InspectionDetector
    from padformer_edge.detect.settings import DetectionSettings, MethodSettings
    from padformer_edge.model.padformer import PADFormer

@dataclass(frozen=True)
class ReferenceSlot:
    """Where a profile keeps what a method computes from its references once (PADFormer's
    encodings, the comparator's cells), and what names them: each method keys the file
    by the weights it reads and ``reference_sha256s``, so a stale file is never read."""

    path: Path
    model_sha256: str  # the profile's checkpoint
    reference_sha256s: tuple[str, ...]


PadformerSource = Callable[[], "PADFormer"]
"""Loads the profile's PADFormer when called: a method that does not score with one
never calls it, so its checkpoint is neither read nor hashed."""

GraphOpener = Callable[["PADFormer"], "GraphRunner"]
"""Opens a PADFormer's exported graphs in a runtime (``deploy.runners.open_runner``)."""


class ScoringMethod(Protocol):
    """What a scoring method answers (``compare.method.CompareMethod``,
    ``padformer.method.PadformerMethod``)."""

    name: str
    metrics: tuple[str, ...]  # the ``detection.metric`` values it scores
    reads_padformer: bool  # whether it scores with the profile's PADFormer checkpoint
    settings_type: type[MethodSettings]  # its section of the detection settings

    def settled(self, settings: DetectionSettings) -> DetectionSettings:
        """``settings`` as a new profile records them (the weights it will read named)."""
        ...

    def torch_detector(
        self,
        references: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
        *,
        cache: ReferenceSlot | None = None,
        open_graphs: GraphOpener | None = None,
    ) -> InspectionDetector:
        """The torch detector for ``settings`` against ``references``, keeping what it
        computes from them in ``cache`` when given."""
        ...

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
        """The torch-free detector on a profile's exported graphs in ``folder``."""
        ...

    def export(
        self, settings: DetectionSettings, out: Path, padformer: PadformerSource
    ) -> dict[str, str]:
        """Write a line's graphs and scoring file into ``out``; ``{file: sha256}``."""
        ...

    def signature(self, settings: DetectionSettings, padformer: PadformerSource) -> dict[str, Any]:
        """The scoring signature of ``settings``, without references."""
        ...

    def selection_features(
        self,
        images: Sequence[np.ndarray],
        settings: DetectionSettings,
        padformer: PadformerSource,
    ) -> torch.Tensor:
        """``[K, D]`` features whose distances say how alike two views look, to choose
        references that cover the most viewpoints (``profiles.selection``)."""
        ...

    def weights_checked(self, settings: DetectionSettings) -> str:
        """Check the weights this method reads besides the profile's checkpoint and say
        what was checked (``doctor``); empty when it reads none."""
        ...

    def weights_name(self, settings: DetectionSettings) -> str:
        """A person's name for the weights of its own that ``settings`` name (their card's),
        which a profile records beside their sha256 in place of a checkpoint; asked only
        of a method whose section names such weights (``MethodSettings.weights_sha256``)."""
        ...
