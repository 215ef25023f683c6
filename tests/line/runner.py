"""Runs the CLI as a subprocess that cannot import torch, for the line tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def line_env(site: Path, report: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NOTIFY_SOCKET"}
    env |= {
        "PYTHONPATH": str(REPO),
        "OMP_NUM_THREADS": "1",
        "PADFORMER_EDGE_STATE_DIR": str(site / "state"),
    }
    if report is not None:
        env["PADFORMER_NO_TORCH_REPORT"] = str(report)
    return env


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tests.line.no_torch", *args]


def run_cli(site: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """One CLI command without torch; fails the test if torch got imported anyway."""
    report = site / f"report-{os.getpid()}-{len(args)}.json"
    done = subprocess.run(
        command(*args),
        cwd=REPO,
        env=line_env(site, report),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if report.exists():
        assert json.loads(report.read_text())["loaded"] == [], done.stderr
    return done
