"""Keep the daemon's resident memory at what it uses: free heap pages handed back now and
then, and what that released logged, so a soak can tell fragmentation from a leak.

The worker calls ``PeriodicTrim.after_batch`` after every batch; at most once per
``interval_s`` it reads the heap's in-use and free bytes and the resident size, calls
``release_free_memory`` and logs ``worker.memory_trimmed`` with the resident size before
and after. Free bytes that grow from one trim to the next, with ``in_use`` flat, are
fragmentation; ``in_use`` that grows is a leak of live objects.
"""

from __future__ import annotations

import time
from pathlib import Path

from padformer_edge.devices.allocator import heap_usage, release_free_memory
from padformer_edge.reporting.log import get_logger

log = get_logger("worker")

TRIM_INTERVAL_S = 120.0
"""Two minutes: the working set faulted in again costs well under a second of CPU per
trim (``benchmarks/allocator.py``: about 40,000 minor faults per detection), under 1%
of a busy worker's time, while without it every hole the varying batch shapes leave in
the heap stays resident for good (``benchmarks/soak.py`` measures the growth)."""
MIB = 1 << 20


def resident_mib() -> float | None:
    """This process's resident set in MiB (Linux), else None."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


class PeriodicTrim:
    """Calls ``release_free_memory`` after a batch, at most once per ``interval_s``."""

    def __init__(self, interval_s: float = TRIM_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.last = time.monotonic()
        self.trims = 0

    def after_batch(self, now: float | None = None) -> bool:
        """Trim if the interval has passed since the last trim; True when it ran."""
        now = time.monotonic() if now is None else now
        if now - self.last < self.interval_s:
            return False
        self.last = now
        heap, before = heap_usage(), resident_mib()
        released = release_free_memory()
        self.trims += 1
        after = resident_mib()
        log.info(
            "worker.memory_trimmed",
            released=released,
            rss_before_mib=None if before is None else round(before, 1),
            rss_after_mib=None if after is None else round(after, 1),
            heap_in_use_mib=None if heap is None else round(heap["in_use"] / MIB, 1),
            heap_free_mib=None if heap is None else round(heap["free"] / MIB, 1),
        )
        return True
