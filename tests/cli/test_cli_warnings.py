"""Third-party noise on stderr: Python warnings come out as structured log events, and
OpenCV's own ``[ WARN:...]`` lines do not appear. One real CLI process, which afterwards
provokes both the way a library deep in a command would."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cli_process import REPO

SCRIPT = """
import sys, warnings
sys.argv = ["padformer-edge", "config", "kinds"]
from padformer_edge.cli.entry import main
main()
import cv2
cv2.imread("/no/such/picture.png")  # OpenCV warns that it cannot open the file
warnings.warn("a library is unhappy", UserWarning)
"""


def test_warnings_are_log_events_and_opencv_stays_quiet() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("OPENCV_LOG_LEVEL", None)
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "[ WARN" not in result.stderr
    events = [json.loads(line) for line in result.stderr.splitlines()]
    [warning] = events
    assert warning["level"] == "warning" and warning["logger"] == "py.warnings"
    assert "UserWarning: a library is unhappy" in warning["event"]
