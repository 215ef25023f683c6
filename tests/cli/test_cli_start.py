"""What a CLI process loads before its command runs: the command tree's objects are
frozen out of the cyclic collector (``cli.entry``) and numpy is not among them, so a
command that refuses at once (a second daemon on a held line, ``tests/daemon/
test_claims.py``) pays for neither. One real CLI process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.cli_process import REPO

SCRIPT = """
import gc, json, sys
sys.argv = ["padformer-edge", "config", "kinds"]
from padformer_edge.cli.entry import main
main()
print(json.dumps({"frozen": gc.get_freeze_count(), "enabled": gc.isenabled(),
                  "numpy": "numpy" in sys.modules, "tracked": len(gc.get_objects())}))
"""


def test_the_command_tree_is_frozen_and_loads_no_numpy() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    state = json.loads(result.stdout.splitlines()[-1])
    assert state["enabled"]  # collections go on for what the command makes
    assert state["frozen"] > state["tracked"]  # most of the process: the tree, frozen
    assert not state["numpy"]
