"""``profile delete``: remove a profile's folder without leaving half a profile behind.

The folder is first renamed to a dot-name beside it, which ``list_profile_names`` and the
daemon skip, and only then removed: a delete interrupted half-way leaves either the whole
profile or an ignored leftover, never a profile missing its references.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.profiles.layout import PROFILE_FILE, check_name
from padformer_edge.profiles.profile import list_profile_names


def existing_profile_folder(root: str | Path, name: str) -> Path:
    """The folder of profile ``name`` under ``root``, which must hold a profile.yaml (valid
    or not: a broken profile is one an operator wants to delete)."""
    folder = Path(root) / check_name(name)
    if not (folder / PROFILE_FILE).is_file():
        known = ", ".join(list_profile_names(root)) or "none"
        raise UserError(
            f"profile '{name}' does not exist under {root} (known: {known}); "
            "check the name with `padformer-edge profile list`."
        )
    return folder


def delete_profile(root: str | Path, name: str) -> Path:
    """Remove profile ``name`` under ``root`` and return the folder it had."""
    folder = existing_profile_folder(root, name)
    doomed = folder.with_name(f".deleting-{name}-{os.getpid()}")
    os.replace(folder, doomed)
    shutil.rmtree(doomed)
    get_logger("profiles").info("profile.deleted", name=name, folder=str(folder))
    return folder
