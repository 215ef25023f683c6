"""Runs ``profile_runtime_cases.py`` (a profile made on one runtime scores the same on
every other, the IR pinned, the daemon's runtime override) in a pytest process of its own.

Those cases keep OpenVINO-compiled profiles in the process that scores them. With them in
the suite's one process, a later test that started and interrupted a training (Ctrl-C
on a child ``train``, a loader worker stopped mid-epoch) ended the whole run in a
segmentation fault, reproducibly on this machine, while each test passes alone; the
crash was not traced to one library. In their own process they cannot take the suite
down, and every case still has to pass.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

CASES = Path(__file__).with_name("profile_runtime_cases.py")
REPO = Path(__file__).resolve().parents[2]


def test_every_profile_runtime_case_passes_in_its_own_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CASES)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = re.search(r"(\d+) passed", summary)
    assert passed and int(passed.group(1)) >= 9, summary
    assert not re.search(r"failed|error|skipped", summary), summary
