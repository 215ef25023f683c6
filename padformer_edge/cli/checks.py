"""Checks of what a command was given, made before torch and the model stack load.

Importing torch, timm and kornia takes seconds, on a loaded line PC up to a minute. A
misspelled path must not cost that: commands check their files and folders with these
first, with the same sentence the deeper check would give, and only then import the
stack. ``remove_if_nothing_written`` undoes a folder a failed command created.
"""

from __future__ import annotations

import os
from pathlib import Path

from padformer_edge.errors import UserError


def require_file(path: Path, what: str, fix: str) -> None:
    """``UserError`` unless ``path`` is an existing file; ``what`` names it, ``fix`` says
    what to pass instead."""
    if not path.exists():
        raise UserError(f"{what} {path} does not exist; {fix}.")
    if not path.is_file():
        raise UserError(f"{what} {path} is not a file; {fix}.")


def require_folder(path: Path, what: str, fix: str, *, non_empty: bool = False) -> None:
    """``UserError`` unless ``path`` is a folder (holding something, if ``non_empty``)."""
    if not path.exists():
        raise UserError(f"{what} {path} does not exist; {fix}.")
    if not path.is_dir():
        raise UserError(f"{what} {path} is not a folder; {fix}.")
    if non_empty and not any(path.iterdir()):
        raise UserError(f"{what} {path} is empty; {fix}.")


def outermost_missing(path: Path) -> Path | None:
    """The highest folder of ``path`` that does not exist yet (what ``mkdir -p`` would
    create first), or None if ``path`` exists."""
    path = path.absolute()
    if path.exists():
        return None
    while not path.parent.exists():
        path = path.parent
    return path


def remove_if_nothing_written(folder: Path) -> None:
    """Remove ``folder`` and its subfolders if no file was written anywhere inside, so a
    command that created it and then failed leaves nothing behind; a folder holding any
    file (a resume point, a checkpoint) is kept whole."""
    if not folder.is_dir():
        return
    for _, _, files in os.walk(folder):
        if files:
            return
    for current, dirs, _ in os.walk(folder, topdown=False):
        for name in dirs:
            os.rmdir(os.path.join(current, name))
    folder.rmdir()
