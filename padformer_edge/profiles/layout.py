"""Where profiles live on disk, what a valid profile name is, and atomic file writes.

A profile is a folder ``<root>/<name>/`` holding ``profile.yaml``, a ``references/``
folder, the reference-encoding cache and, for the onnxruntime runtime, an ``exported/``
folder of graphs; a profile grown from the line adds ``approved/`` (approved candidates'
pictures) and ``versions/<n>/`` (each earlier version's profile.yaml and references).
Every file a command changes is written to a temporary sibling and moved into place with
``os.replace``, so a command that fails or is killed half-way
leaves the previous version of the profile as it was.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.store.locations import state_dir

PROFILES_ENV = "PADFORMER_EDGE_PROFILES"
PROFILE_FILE = "profile.yaml"
REFERENCES_DIR = "references"
CACHE_FILE = "reference_cache.safetensors"
BACKGROUND_STEM = "background"  # the empty belt's photo: background.<its suffix>
EXPORTED_DIR = "exported"  # the graphs and scoring files of ``profile export``
APPROVED_DIR = "approved"  # approved candidates' pictures, copied in by ``profile refresh``
VERSIONS_DIR = "versions"  # ``versions/<n>/``: profile.yaml and references/ of version n
# A name becomes a folder and a DB column value: no separators, no leading dot or dash.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def profiles_root(explicit: str | Path | None = None) -> Path:
    """``explicit`` if given, else ``$PADFORMER_EDGE_PROFILES``, else ``<state dir>/profiles``."""
    if explicit is not None:
        return Path(explicit).expanduser()
    if env := os.environ.get(PROFILES_ENV):
        return Path(env).expanduser()
    return state_dir() / "profiles"


def check_name(name: str) -> str:
    """Refuse names that could escape the root or confuse a shell or a file manager."""
    if not NAME_PATTERN.match(name):
        raise UserError(
            f"profile name '{name}' is not allowed; use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return name


def write_yaml_atomic(path: Path, data: dict) -> None:
    """``data`` as block-style YAML, keys in the schema's order."""
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    write_atomic(path, text.encode("utf-8"))
