"""The checkout as ``git status`` sees it, so a test run can prove it left the repository
as it found it (issue 51: the suite rewrote a tracked heatmap, a command wrote
``./heatmaps`` into whatever folder it ran in).

The comparison is before against after, never against a clean tree: CI makes its
virtual environments inside the checkout before pytest starts, and a developer's
checkout carries edits and scratch files. Two caches are left out, both gitignored and
both made by the tools rather than by a test: ``__pycache__`` (Python writes byte code
next to every module the tests import, so a fresh clone gets them from its first
import) and ``.pytest_cache`` (pytest's own, made by the first ``python -m pytest`` the
README gives; CI runs with ``-p no:cacheprovider``). Every other entry counts, ignored
or not: a file a test wrote into ``docs/`` or a ``heatmaps/`` folder is a failure even
where ``.gitignore`` would hide it.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CACHE_FOLDERS = ("__pycache__", ".pytest_cache")  # the interpreter's and pytest's


def _path(line: str) -> str:
    return line[3:].strip('"')  # porcelain v1: two status letters, a space, the path


def _is_cache(line: str) -> bool:
    return any(part in CACHE_FOLDERS for part in Path(_path(line)).parts)


def _entry(line: str, repo: Path) -> str:
    """``PATH  STATE`` for one status line: the file's sha256, ``folder`` (an untracked or
    ignored folder, listed whole) or ``deleted``. The status letters are left out, so
    staging a file during a run (``??`` to ``A``) is no change, while rewriting a file
    that was already modified or untracked is: its line stays, its bytes do not."""
    name = _path(line)
    path = repo / name
    if "D" in line[:2]:
        state = "deleted"
    elif line.endswith("/"):
        state = "folder"
    elif path.is_file() and not path.is_symlink():
        state = f"sha256:{hashlib.sha256(path.read_bytes()).hexdigest()[:16]}"
    else:
        state = "present"
    return f"{name}  {state}"


def checkout_status(repo: Path = REPO) -> frozenset[str] | None:
    """Every entry of ``git status --ignored --porcelain`` of ``repo`` as ``_entry``
    gives it, less the byte-code caches, or None where there is no git or no checkout
    (a source archive: nothing to compare)."""
    if shutil.which("git") is None or not (repo / ".git").exists():
        return None
    done = subprocess.run(
        ["git", "status", "--ignored", "--porcelain", "--no-renames"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        return None
    lines = (line for line in done.stdout.splitlines() if not _is_cache(line))
    return frozenset(_entry(line, repo) for line in lines)


def changes(before: frozenset[str], after: frozenset[str]) -> list[str]:
    """The entries that appeared or changed (``+``) and those that went (``-``), sorted
    by path, a file's old entry before its new one, so a report reads as a listing."""
    appeared = [f"+ {entry}" for entry in after - before]
    went = [f"- {entry}" for entry in before - after]
    return sorted(appeared + went, key=lambda line: (line[2:].split("  ")[0], line[0] == "+"))
