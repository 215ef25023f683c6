"""Checking a profile's exported files against the sha256 each was recorded with, before
a line loads any of them: a graph changed or replaced after export must not score."""

from __future__ import annotations

from pathlib import Path

from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256


def verify_files(folder: Path, files: dict[str, str], fix: str) -> None:
    """Refuse a missing file or one whose bytes differ from the recorded sha256."""
    for name, digest in sorted(files.items()):
        path = folder / name
        if not path.is_file():
            raise UserError(f"exported file {path} is missing; {fix}.")
        if file_sha256(path) != digest:
            raise UserError(
                f"exported file {path} differs from the sha256 its profile records "
                f"({digest[:12]}...); {fix}."
            )
