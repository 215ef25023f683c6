"""What compiled libraries print straight to the process's stderr, routed into the log.

Some libraries write to file descriptor 2 from C, below Python's ``sys.stderr``, where
neither ``warnings`` nor ``logging`` sees it: pybullet prints ``pybullet build time: ...``
whenever it is imported. In a JSON log stream that is a line no log reader can parse,
and in front of a user error it turns the promised one line into two.
``import_native`` imports such a module with descriptor 2 pointed at a temporary file,
then logs each line caught as a ``native_output`` event naming the module, at DEBUG: a
build banner is nothing an operator acts on, and ``--log-level DEBUG`` shows it. Only
the import itself runs redirected, since Python's own stderr (our log included) is the
same descriptor: anything else logged meanwhile would be caught too. A later ``import``
of the module anywhere finds it loaded and prints nothing.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
from types import ModuleType

from padformer_edge.reporting.log import get_logger

STDERR_FD = 2


def import_native(name: str) -> ModuleType:
    """Import module ``name``; what it prints to descriptor 2 meanwhile is logged."""
    if name in sys.modules:
        return sys.modules[name]
    sys.stderr.flush()
    saved = os.dup(STDERR_FD)
    with tempfile.TemporaryFile() as caught:
        os.dup2(caught.fileno(), STDERR_FD)
        try:
            module = importlib.import_module(name)
        finally:
            os.dup2(saved, STDERR_FD)
            os.close(saved)
            caught.seek(0)
            text = caught.read().decode(errors="replace")
    log = get_logger("native")
    for line in filter(None, (raw.strip() for raw in text.splitlines())):
        log.debug("native_output", library=name, line=line)
    return module
