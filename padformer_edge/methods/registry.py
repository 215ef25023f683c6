"""The registry of scoring methods: which method scores a metric, and what every method
answers.

A profile, ``detect``, the daemon and ``doctor`` ask ``method_for(settings.metric)`` and
call the method; none of them branches on a metric's name. The words ``detection.metric``
accepts are the methods' own (``METRICS``): the CLI offers them and ``check_settings``
holds a profile file and the CLI's options to them, so a new method is a package under
``padformer_edge/methods`` with an object answering ``ScoringMethod``, and one line in
``METHODS`` (docs/architecture.md#adding-a-scoring-method).

Importing this module loads neither torch nor a runtime: each method imports what it
runs inside the call that runs it, so a torch-free line install and the light commands
(``profile list``, ``config check``) can name methods.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from padformer_edge.methods.compare.method import COMPARE
from padformer_edge.methods.distance.method import DISTANCE
from padformer_edge.methods.fused.method import FUSED
from padformer_edge.methods.interface import ScoringMethod
from padformer_edge.methods.padformer.method import PADFORMER

if TYPE_CHECKING:
    from padformer_edge.detect.settings import DetectionSettings

METHODS: dict[str, ScoringMethod] = {
    method.name: method for method in (COMPARE, FUSED, DISTANCE, PADFORMER)
}
"""Every scoring method, by name."""

METRICS: tuple[str, ...] = tuple(metric for m in METHODS.values() for metric in m.metrics)
"""Every word ``detection.metric`` accepts, each method's in the registry's order."""


def method_for(metric: str) -> ScoringMethod:
    """The method that scores ``metric`` (a ``DetectionSettings.metric`` value)."""
    for method in METHODS.values():
        if metric in method.metrics:
            return method
    raise ValueError(f"metric '{metric}' is unknown; choose one of {', '.join(METRICS)}")


def check_settings(settings: DetectionSettings) -> DetectionSettings:
    """``settings`` when a method scores their metric and reads every setting given;
    otherwise a ``ValueError`` in one sentence naming the setting and the fix. A
    setting the method would quietly ignore (a comparator, scoring settings) is refused,
    so a profile never claims a setting its scores do not follow."""
    method = method_for(settings.metric)
    if settings.comparator is not None and not method.reads_comparator:
        readers = " or ".join(
            metric for one in METHODS.values() if one.reads_comparator for metric in one.metrics
        )
        raise ValueError(
            f"a comparator is read by metric {readers} only, not {settings.metric}: leave "
            f"comparator out, or choose metric {readers}"
        )
    if settings.scoring.changes() and settings.metric not in method.scoring_metrics:
        readers = " or ".join(m for one in METHODS.values() for m in one.scoring_metrics)
        raise ValueError(
            f"the scoring settings tune the fused and distance readouts; metric "
            f"{settings.metric} reads none of them: leave them out, or choose metric {readers}"
        )
    return settings
