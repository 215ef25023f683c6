"""The README's first set-up command as one command: data, model, profile, daemon, alerts.

Names resolve lazily (PEP 562): ``demo`` without a shipped model must say so at once,
before torch and the training code are imported.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "FULL": "padformer_edge.demo.plan",
    "GENERIC": "padformer_edge.demo.plan",
    "GENERIC_QUICK": "padformer_edge.demo.plan",
    "QUICK": "padformer_edge.demo.plan",
    "DemoPlan": "padformer_edge.demo.plan",
    "DemoReport": "padformer_edge.demo.run",
    "TrainingFacts": "padformer_edge.demo.run",
    "run_demo": "padformer_edge.demo.run",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
