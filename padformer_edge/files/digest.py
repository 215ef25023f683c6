"""The sha256 of a file, read in the standard library's buffered loop.

Checkpoints, reference images, camera files and mesh files are all pinned by this one
digest; one helper means one reading strategy (``hashlib.file_digest``: bounded memory,
no Python-level chunk loop) and a checksum that means the same thing everywhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
