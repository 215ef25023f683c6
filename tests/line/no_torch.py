"""``python -m tests.line.no_torch ARGS``: the CLI with torch made unimportable.

A meta-path finder refuses torch and the libraries built on it before the CLI starts, so
a command that reaches for any of them fails the way it would on a line PC without them
(where they are simply absent: CI's line venv). At exit the process writes whether any
of them got into ``sys.modules`` to ``$PADFORMER_NO_TORCH_REPORT`` when set.
"""

from __future__ import annotations

import atexit
import importlib.abc
import json
import os
import sys

BLOCKED = ("torch", "torchvision", "timm", "kornia")


class BlockTorch(importlib.abc.MetaPathFinder):
    """Raises ModuleNotFoundError for the torch stack, as a venv without it would."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            message = f"No module named '{name}' (blocked: the line install runs without torch)"
            raise ModuleNotFoundError(message, name=name)
        return None


def loaded() -> list[str]:
    """The blocked libraries present in ``sys.modules`` (none, on the line path)."""
    return sorted({name.split(".")[0] for name in sys.modules} & set(BLOCKED))


def report() -> None:
    if path := os.environ.get("PADFORMER_NO_TORCH_REPORT"):
        with open(path, "w") as handle:
            json.dump({"loaded": loaded()}, handle)


def main() -> None:
    sys.meta_path.insert(0, BlockTorch())
    atexit.register(report)
    sys.argv = ["padformer-edge", *sys.argv[1:]]
    from padformer_edge.cli.entry import main as cli

    cli()


if __name__ == "__main__":
    main()
