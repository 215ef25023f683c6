"""The CLI run the way a user runs it: ``python -m padformer_edge`` in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_cli(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Exit code and captured output of one CLI call; this checkout's code on the path and
    one OpenMP thread, so parallel test processes do not oversubscribe the CPU."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "padformer_edge", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )


# Runs the CLI like ``python -m padformer_edge`` and, at exit (also after sys.exit), writes
# the names of every imported module to the file named by the first argument.
_MODULE_PROBE = """
import atexit, sys
record = sys.argv.pop(1)
def _write():
    with open(record, "w", encoding="utf-8") as out:
        out.write("\\n".join(sorted(sys.modules)))
atexit.register(_write)
sys.argv[0] = "padformer-edge"
from padformer_edge.cli.app import main
main()
"""


def run_cli_modules(
    *args: str, record: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """``run_cli`` that also returns the set of modules the process had imported when it
    exited: how tests prove a command never loaded torch."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env or {})}
    result = subprocess.run(
        [sys.executable, "-c", _MODULE_PROBE, str(record), *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )
    return result, set(record.read_text(encoding="utf-8").split())
