"""pybullet, imported without the build-time banner its C extension prints on stdout.

The banner would otherwise land in the middle of command output such as
``synth --list-builtins`` or a benchmark's JSON line, so the import silences file
descriptor 1 for its duration.
"""

from __future__ import annotations

import os
import sys


def _import_quietly():  # type: ignore[no-untyped-def]
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        import pybullet as module
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    return module


pybullet = _import_quietly()
