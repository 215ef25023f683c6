"""Run a benchmark or research script as the docs run it: a fresh process from the
repository root, one thread. Tests reach ``benchmarks/`` and ``research/``'s scripts only
this way, never by importing them: the scripts are command-line tools whose options and
output are what the docs rely on."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_benchmark(
    script: str, *args: str, timeout: int = 300, folder: str = "benchmarks"
) -> subprocess.CompletedProcess[str]:
    """``python FOLDER/SCRIPT ARGS...`` (``benchmarks/`` unless ``folder`` says
    ``research``) with this interpreter, output captured."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    command = [sys.executable, str(REPO / folder / script), *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=timeout, cwd=REPO
    )


def run_research(script: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    """``python research/SCRIPT ARGS...``, as ``run_benchmark`` runs a benchmark."""
    return run_benchmark(script, *args, timeout=timeout, folder="research")
