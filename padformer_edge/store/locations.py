"""The state directory: where the default database, heatmaps and profiles live.

Apart from ``engine`` because profiles, the daemon config and ``doctor`` need the folder
without needing SQLAlchemy, which takes most of a CLI command's start-up.
"""

from __future__ import annotations

import os
from pathlib import Path

STATE_DIR_ENV = "PADFORMER_EDGE_STATE_DIR"


def state_dir() -> Path:
    """The directory for the default database and its backups.

    ``PADFORMER_EDGE_STATE_DIR`` wins; under systemd ``StateDirectory=`` sets
    ``STATE_DIRECTORY`` (``/var/lib/padformer-edge``); otherwise the XDG state home.
    """
    if explicit := os.environ.get(STATE_DIR_ENV):
        return Path(explicit)
    if systemd := os.environ.get("STATE_DIRECTORY"):
        return Path(systemd.split(":")[0])
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "padformer-edge"
