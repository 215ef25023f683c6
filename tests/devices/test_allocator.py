"""The allocator settings keep freed blocks mapped: measured as page faults in a child."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys

import pytest

from padformer_edge.devices.allocator import DISABLE_VARIABLE

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="needs glibc"
)

CHILD = """
import json, resource, threading
from padformer_edge.devices.allocator import retain_freed_memory
applied = retain_freed_memory()
import numpy as np

def churn(result):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):  # like a forward pass: 8 activations of 4 MiB alive, then freed
        blocks = [np.ones(1 << 20, dtype=np.float32) for _ in range(8)]
        del blocks
    result.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)

main, worker = [], []
churn(main)
thread = threading.Thread(target=churn, args=(worker,))
thread.start()
thread.join()
print(json.dumps({"applied": applied, "main": main[0], "worker": worker[0]}))
"""


def run_child(setting: str) -> dict:
    env = {**os.environ, DISABLE_VARIABLE: setting}
    out = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_freed_blocks_are_reused_without_faulting_again():
    pages = (32 << 20) // os.sysconf("SC_PAGE_SIZE")  # one loop's 8 x 4 MiB
    default, tuned = run_child("0"), run_child("1")
    assert default["applied"] is False and tuned["applied"] is True
    # glibc's defaults hand the freed 32 MiB back, so later loops fault it in again
    assert default["main"] > 5 * pages
    # tuned: faulted in about once and then reused, on the main and on a worker thread
    assert tuned["main"] < 2 * pages
    assert tuned["worker"] < 2 * pages
