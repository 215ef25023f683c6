"""Whether this checkout's git history holds a commit: docs records name the commit
their inputs left the tree with, and the tests that check or reprint them need to know
whether that history is here (a shallow clone or a source archive has none)."""

from __future__ import annotations

import shutil
import subprocess

from tests.benchmark_process import REPO


def is_commit(revision: str) -> bool | None:
    """Whether ``revision`` names a commit of this repository; None where git or its
    history is not here (a shallow clone, a source archive)."""
    if shutil.which("git") is None or not (REPO / ".git").exists():
        return None
    if (
        subprocess.run(
            ["git", "rev-parse", "--is-shallow-repository"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=30,
        ).stdout.strip()
        == "true"
    ):
        return None  # fmt: skip
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{revision}^{{commit}}"],
        cwd=REPO,
        capture_output=True,
        timeout=30,
    )
    return found.returncode == 0
