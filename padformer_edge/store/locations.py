"""The state directory: where the default database, heatmaps and profiles live, and how
a path inside it is recorded (relative, so the folder can move).

Apart from ``engine`` because profiles, the daemon config and ``doctor`` need the folder
without needing SQLAlchemy, which takes most of a CLI command's start-up.
"""

from __future__ import annotations

import os
from functools import lru_cache
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


def stored_path(path: str | Path, base: Path | None = None) -> str:
    """How the state records a file: relative to the state folder when it lies inside,
    so the folder can be moved or restored elsewhere with every picture intact; absolute
    otherwise (a camera folder on another disk stays where the line writes it).

    The test is made on the path as given and again with the links of its folders
    resolved, so a camera root that was resolved and a state folder named through a link
    still match. The file's own name is never followed: a link a camera wrote is recorded
    as the link (and refused by the worker), not as whatever it points at.
    """
    base = (base or state_dir()).expanduser()
    absolute = Path(path).expanduser().absolute()
    resolved = absolute.parent.resolve() / absolute.name
    for root, candidate in ((base.absolute(), absolute), (base.resolve(), resolved)):
        if candidate.is_relative_to(root) and candidate != root:
            return candidate.relative_to(root).as_posix()
    return str(absolute)


def resolve_stored(recorded: str, base: Path | None = None) -> Path:
    """The file a recorded path names: a relative one lies under the current state
    folder (``stored_path``), an absolute one is taken as it is."""
    path = Path(recorded)
    if path.is_absolute():
        return path
    return (base.expanduser().absolute() if base else _absolute_state(*_state_names())) / path


def _state_names() -> tuple[str | None, ...]:
    """What ``state_dir`` reads from the environment, in its order, and the working
    folder that a relative one is taken from."""
    get = os.environ.get
    names = get(STATE_DIR_ENV), get("STATE_DIRECTORY"), get("XDG_STATE_HOME"), get("HOME")
    return (*names, os.getcwd())


@lru_cache(maxsize=8)
def _absolute_state(*names: str | None) -> Path:
    """``state_dir()`` made absolute, for the environment ``names`` (``_state_names``):
    worked out once per environment, since the daemon resolves two recorded paths per
    image and building the folder each time cost more than the rest of both. The
    environment is the key, so a changed variable (a test's) is still followed."""
    return state_dir().expanduser().absolute()
