"""Hold one module's import in a process until a gate file exists: a test's way to keep a
daemon in one phase of its start-up (``watch`` importing what runs it), which otherwise
lasts a second or two, for exactly as long as the test needs.

    python -c "from tests.daemon.held_import import run_held; run_held(MODULE, GATE)" ARGS

runs ``python -m padformer_edge ARGS`` with ``MODULE``'s first import waiting for
``GATE``; ``held_marker(GATE)`` appears when the wait begins (``launcher`` makes the
``python`` arguments before ``ARGS`` for ``DaemonProcess``).
"""

from __future__ import annotations

import importlib.abc
import runpy
import sys
import time
from pathlib import Path


def held_marker(gate: Path) -> Path:
    """The file that appears when the held import starts waiting for ``gate``."""
    return gate.with_name(gate.name + ".held")


class _Gate(importlib.abc.MetaPathFinder):
    """Finds nothing: it only waits, the first time ``module`` is looked up."""

    def __init__(self, module: str, gate: Path) -> None:
        self.module, self.gate = module, gate

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname == self.module:
            sys.meta_path.remove(self)
            held_marker(self.gate).touch()
            while not self.gate.exists():
                time.sleep(0.05)  # signals are handled between sleeps, as in any import
        return None


def run_held(module: str, gate: str) -> None:
    """``python -m padformer_edge`` with this process's arguments, ``module`` held."""
    sys.meta_path.insert(0, _Gate(module, Path(gate)))
    sys.argv = ["padformer_edge", *sys.argv[1:]]
    runpy.run_module("padformer_edge", run_name="__main__", alter_sys=True)


def launcher(module: str, gate: Path) -> tuple[str, ...]:
    """The ``python`` arguments that run the CLI with ``module``'s import held at ``gate``."""
    code = f"from tests.daemon.held_import import run_held; run_held({module!r}, {str(gate)!r})"
    return ("-c", code)
