"""PADFormer as plain torch modules; imports nothing else of the project but ``errors``.

The names below resolve on first use (PEP 562): validating a training recipe needs only
``PRESETS`` (plain dataclasses), and must not wait seconds for torch and timm to load.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "PRESETS": "padformer_edge.model.config",
    "ModelConfig": "padformer_edge.model.config",
    "PADFormer": "padformer_edge.model.padformer",
    "ReferenceCache": "padformer_edge.model.padformer",
    "build_model": "padformer_edge.model.padformer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
