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
to pass: any failure, error, skip or deselection fails this test.

The process starts when the suite has collected this test (``tests/deploy/conftest.py``)
and runs beside the tests before it, which mostly wait on a daemon or a single-threaded
model: the suite's wall time no longer pays for it in full. Under pytest-xdist (the
suite's default) it starts when the test runs, beside the other worker's tests.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

HERE = Path(__file__).parent
CASES = [
    "profile_runtime_cases.py",
    "export_parity_cases.py",
    "cli_export_cases.py",
    "runtime_setting_cases.py",
]
REPO = HERE.parents[1]
TIMEOUT_S = 2400
_started: list[tuple[subprocess.Popen[bytes], IO[bytes], IO[bytes]]] = []


def start_cases() -> None:
    """Start the cases' pytest process (once), its output into files (a pipe nobody reads
    until the end could fill and stop it); ``finish_cases`` collects it."""
    if not _started:
        # -n 0: the cases in this one process, not the suite's pytest-xdist workers
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # noqa: SIM115 (kept open until finish_cases)
        process = subprocess.Popen(command + [str(HERE / name) for name in CASES], cwd=REPO,
                                   stdout=out, stderr=err)  # fmt: skip
        _started.append((process, out, err))


def finish_cases() -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of the cases' process, started here if need be."""
    start_cases()
    process, out, err = _started[0]
    status = process.wait(timeout=TIMEOUT_S)
    texts = []
    for file in (out, err):
        file.seek(0)
        texts.append(file.read().decode(errors="replace"))
    return status, texts[0], texts[1]


def test_every_openvino_case_passes_in_its_own_process() -> None:
    status, stdout, stderr = finish_cases()
    summary = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    assert status == 0, stdout[-4000:] + stderr[-2000:]
    # every case ran and passed: none skipped or deselected, no collection error
    assert re.match(r"=* ?\d+ passed", summary), summary
    assert not re.search(r"failed|error|skipped|deselected|no tests ran", summary), summary
