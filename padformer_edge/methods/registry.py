"""The registry of scoring methods: which method scores a metric, and what every method
answers.

A profile, ``detect``, the daemon and ``doctor`` ask ``method_for(settings.metric)`` and
call the method; none of them branches on a metric's name. A new method is a package
under ``padformer_edge/methods`` with an object answering ``ScoringMethod``, and one
line in ``METHODS`` (docs/architecture.md#adding-a-scoring-method).

Importing this module loads neither torch nor a runtime: each method imports what it
runs inside the call that runs it, so a torch-free line install and the light commands
(``profile list``, ``config check``) can name methods.
"""

from __future__ import annotations

from padformer_edge.methods.compare.method import COMPARE
from padformer_edge.methods.distance.method import DISTANCE
from padformer_edge.methods.fused.method import FUSED
from padformer_edge.methods.interface import ScoringMethod
from padformer_edge.methods.padformer.method import PADFORMER

METHODS: dict[str, ScoringMethod] = {
    method.name: method for method in (COMPARE, FUSED, DISTANCE, PADFORMER)
}
"""Every scoring method, by name."""


def method_for(metric: str) -> ScoringMethod:
    """The method that scores ``metric`` (a ``DetectionSettings.metric`` value)."""
    for method in METHODS.values():
        if metric in method.metrics:
            return method
    raise ValueError(f"no scoring method scores metric {metric!r}")
