"""Runs every test that compiles and runs OpenVINO graphs in a pytest process of its own:
``profile_runtime_cases.py`` (a profile made on one runtime scores the same on every
other, the IR pinned, the daemon's runtime override), ``export_parity_cases.py`` (each
preset's graphs against torch), ``cli_export_cases.py`` (export and detect from the
command line) and ``runtime_setting_cases.py`` (the runtime switch).

With OpenVINO's compiled graphs in the suite's one process, a later test that forked
or interrupted a child (a loader worker stopped mid-epoch, Ctrl-C on a child ``train``,
the browser tests' driver) ended the whole run in a segmentation fault, at a different
test from run to run, while each test passes alone; it was not traced to one library.
In a process of their own they cannot take the suite down, and every case still has
to pass: the count is checked, and any failure, error or skip fails this test.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
CASES = [
    "profile_runtime_cases.py",
    "export_parity_cases.py",
    "cli_export_cases.py",
    "runtime_setting_cases.py",
]
REPO = HERE.parents[1]


def _pytest(*args: str) -> tuple[subprocess.CompletedProcess[str], str]:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
        + [str(HERE / name) for name in CASES],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=2400,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    return done, summary


def test_every_openvino_case_passes_in_its_own_process() -> None:
    listed, collected = _pytest("--collect-only")
    count = re.search(r"(\d+) tests? collected", collected)
    assert listed.returncode == 0 and count, listed.stdout[-4000:] + listed.stderr[-2000:]
    done, summary = _pytest()
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # every collected case ran and passed: none skipped, none lost to a collection error
    assert summary.startswith(f"{count.group(1)} passed"), summary
    assert not re.search(r"failed|error|skipped|deselected", summary), summary
