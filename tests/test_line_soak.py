"""The line soak (``benchmarks/line_soak.py``) refuses to run where torch is installed:
its figures are the torch-free install's, and a venv that can import torch would pass
for one. The soak itself runs for hours on a prepared site; docs/benchmarks.md#soak
holds its table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.benchmark_process import REPO


def test_the_line_soak_refuses_a_venv_where_torch_imports(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/line_soak.py", "run", "--site", str(tmp_path),
         "--metric", "distance", "--images", "10"],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "torch can be imported here; run the soak in a `.[line]` venv" in done.stderr
