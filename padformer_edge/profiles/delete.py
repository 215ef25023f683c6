"""``profile delete``: remove a profile's folder without leaving half a profile behind.

The folder is first renamed to a dot-name beside it, which ``list_profile_names`` and the
daemon skip, and only then removed: a delete interrupted half-way leaves either the whole
profile or an ignored leftover, never a profile missing its references.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from padformer_edge.profiles.profile import existing_profile_folder
from padformer_edge.reporting.log import get_logger

UNKNOWN_FIX = "check the name with `padformer-edge profile list`"
"""What to do about a profile to delete that does not exist (a broken profile.yaml is still
a profile: an operator may want to delete exactly that)."""


def delete_profile(root: str | Path, name: str) -> Path:
    """Remove profile ``name`` under ``root`` and return the folder it had."""
    folder = existing_profile_folder(root, name, UNKNOWN_FIX)
    doomed = folder.with_name(f".deleting-{name}-{os.getpid()}")
    os.replace(folder, doomed)
    shutil.rmtree(doomed)
    get_logger("profiles").info("profile.deleted", name=name, folder=str(folder))
    return folder
