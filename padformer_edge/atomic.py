"""Whole-or-nothing file writes shared by heatmaps, profiles and caches.

A reader (an operator's viewer, a sync job, the daemon after a power cut) must never see
half a file: data goes to a synced temporary sibling that ``os.replace`` moves into place
in one step, on the same file system.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from padformer_edge.errors import UserError


def write_atomic(path: str | Path, data: bytes, *, fix: str = "check its permissions") -> Path:
    """Write ``data`` to ``path`` atomically; an unwritable folder is a ``UserError``.

    ``fix`` completes the error sentence with what the caller's user should do.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as err:
        raise UserError(f"cannot write into {path.parent} ({err.strerror}); {fix}.") from err
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
