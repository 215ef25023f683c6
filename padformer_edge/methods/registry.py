"""The registry of scoring methods: which method scores a metric, and what every method
answers.

A profile, ``detect``, the daemon and ``doctor`` ask ``method_for(settings.metric)`` and
call the method; none of them branches on a metric's name. The words ``detection.metric``
accepts are the methods' own (``metrics()``), and each method's settings are its section
(``ScoringMethod.settings_type``), which ``register`` enters in the detection settings'
table, so a file and the command line are held to what the method reads. A new method is a
package under ``padformer_edge/methods`` with an object answering ``ScoringMethod`` and
its section, named in ``BUILT_IN`` or handed to ``register`` at run time
(docs/architecture.md#adding-a-scoring-method).

Importing this module loads neither torch nor a runtime: each method imports what it
runs inside the call that runs it, so a torch-free line install and the light commands
(``profile list``, ``config check``) can name methods.
"""

from __future__ import annotations

from padformer_edge.detect.settings import SECTIONS
from padformer_edge.methods.compare.method import COMPARE
from padformer_edge.methods.interface import ScoringMethod
from padformer_edge.methods.padformer.distance_method import DISTANCE
from padformer_edge.methods.padformer.fused_method import FUSED
from padformer_edge.methods.padformer.method import PADFORMER

BUILT_IN: tuple[ScoringMethod, ...] = (COMPARE, FUSED, DISTANCE, PADFORMER)
"""The product's methods, in the order the CLI and the docs list their metrics."""

METHODS: dict[str, ScoringMethod] = {}
"""Every registered scoring method, by name, in the order registered."""


def register(method: ScoringMethod) -> ScoringMethod:
    """Make ``method`` score its metrics: its section is read from files and options from
    now on. A name or a metric another method has is refused (``ValueError``)."""
    taken = set(metrics())
    clashing = [metric for metric in method.metrics if metric in taken]
    if method.name in METHODS or clashing:
        raise ValueError(f"method {method.name} clashes with a registered one ({clashing})")
    if set(method.settings_type.metrics()) != set(method.metrics):
        raise ValueError(f"method {method.name}'s section is chosen by other metrics")
    SECTIONS.add(method.settings_type)
    METHODS[method.name] = method
    return method


def unregister(name: str) -> None:
    """Remove the method registered as ``name`` (a test's, once it is done)."""
    method = METHODS.pop(name)
    SECTIONS.remove(method.settings_type)


def metrics() -> tuple[str, ...]:
    """Every word ``detection.metric`` accepts, each method's in the registry's order."""
    return tuple(metric for method in METHODS.values() for metric in method.metrics)


def method_for(metric: str) -> ScoringMethod:
    """The method that scores ``metric`` (a ``DetectionSettings.metric`` value)."""
    for method in METHODS.values():
        if metric in method.metrics:
            return method
    raise ValueError(f"metric '{metric}' is unknown; choose one of {', '.join(metrics())}")


for _method in BUILT_IN:
    register(_method)
