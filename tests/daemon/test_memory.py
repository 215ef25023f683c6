"""The daemon's memory stays at its working set: detectors are warmed on the largest
batch the worker sends, and free heap pages go back to the kernel now and then."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from padformer_edge.daemon.inspectors import build_inspector, open_profile
from padformer_edge.daemon.memory import PeriodicTrim
from padformer_edge.profiles.profile import Profile
from tests.daemon.harness import make_profile

glibc = pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc", reason="needs glibc"
)


def test_the_detector_is_warmed_on_the_workers_largest_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Memory follows the batch: warmed on one image, the first full batch grew the
    daemon long after start; warmed on a full one, the peak comes before READY."""
    make_profile(tmp_path / "profiles", "bolt", threshold=1.0)
    sizes: list[int] = []
    build = Profile.build_detector

    def spied(self: Profile, device: str | None = None, runtime: str | None = None):
        detector = build(self, device, runtime)
        detect = detector.detect
        detector.detect = lambda images: sizes.append(len(images)) or detect(images)
        return detector

    monkeypatch.setattr(Profile, "build_detector", spied)
    profile, threshold = open_profile(tmp_path / "profiles", "bolt")
    build_inspector(profile, threshold, "cpu", batch=3)
    assert sizes == [3]


def test_trims_come_at_most_once_per_interval() -> None:
    trim = PeriodicTrim(interval_s=60.0)
    start = trim.last
    assert not trim.after_batch(now=start + 59.0)
    assert trim.after_batch(now=start + 60.0)
    assert not trim.after_batch(now=start + 119.0)
    assert trim.after_batch(now=start + 121.0)
    assert trim.trims == 2


CHILD = """
import json
from padformer_edge.devices.allocator import heap_usage, retain_freed_memory
from padformer_edge.daemon.memory import PeriodicTrim, resident_mib
retain_freed_memory()
import numpy as np
blocks = [np.ones(1 << 20) for _ in range(40)]  # 320 MiB in 8 MiB blocks, from the heap
del blocks
held, free = resident_mib(), heap_usage()["free"] / 2**20
PeriodicTrim(interval_s=0.0).after_batch()
print(json.dumps({"held": held, "free": free, "after": resident_mib()}))
"""


@glibc
def test_a_trim_hands_the_free_heap_back() -> None:
    """With the daemon's malloc settings freed blocks stay resident (that is their
    point); the periodic trim returns them, so what stays is what is in use."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=120
    )
    measured = json.loads(done.stdout.strip().splitlines()[-1])
    assert measured["free"] > 300
    assert measured["held"] - measured["after"] > 250
