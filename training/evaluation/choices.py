"""Words the evaluation accepts, in a module without heavy imports so the CLI can list
them in ``--help`` without loading torch."""

from __future__ import annotations

from typing import Literal, get_args

RefStrategy = Literal["random", "nearest", "farthest"]
REF_STRATEGIES: tuple[str, ...] = get_args(RefStrategy)
