"""The daemon's sign of life, as a small file the operator's page can read.

The daemon and the page may be different processes (``watch`` and ``serve``), and the
page imports nothing of the daemon, so the daemon leaves a JSON file in the state
directory while it is healthy and the page reports how old it is. The file is replaced
whole (``os.replace``) but not synced: losing the last beat on power loss costs nothing.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from padformer_edge.store import state_dir

FILE_NAME = "daemon-heartbeat.json"


def heartbeat_path() -> Path:
    return state_dir() / FILE_NAME


def beat(payload: dict[str, Any], path: Path | None = None) -> None:
    """Record that the daemon is healthy now, with ``payload`` (backlog, pid...)."""
    path = path or heartbeat_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps({**payload, "unix_time": time.time()}), encoding="utf-8")
    os.replace(partial, path)


def read(path: Path | None = None) -> dict[str, Any] | None:
    """The last beat with its ``age_s``, or ``None`` if no daemon has written one."""
    path = path or heartbeat_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["age_s"] = max(time.time() - float(data["unix_time"]), 0.0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return data if isinstance(data, dict) else None
