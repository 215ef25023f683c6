"""Package attributes that import their module on first use (PEP 562).

The CLI starts in well under a second only because packages whose modules pull in torch
(``profiles``, ``daemon``) name their exports here instead of importing them: a command
that never builds a detector never pays for the model.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` resolving each name from ``exports``
    (name -> module path) at first access."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(exports[name]), name)

    return __getattr__
