"""How a few-shot evaluation picks a test image's N references from a class's good views.

The words live in the runtime package, in a module without heavy imports, so that the
CLI can list them in ``eval --help`` without loading torch or the training package (which
imports this module, never the other way round)."""

from __future__ import annotations

from typing import Literal, get_args

RefStrategy = Literal["random", "nearest", "farthest"]
REF_STRATEGIES: tuple[str, ...] = get_args(RefStrategy)
