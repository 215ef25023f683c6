"""What a benchmark reads about a live process from /proc (Linux): its resident memory
and its CPU time. The daemon benchmarks (throughput, chaos, soak) measure the real
``padformer-edge watch`` subprocess this way, from outside, so the numbers are what the
operating system charges the service and nothing the measurement adds to it."""

from __future__ import annotations

import os
from pathlib import Path


def status_kib(pid: int, *fields: str) -> dict[str, int]:
    """``fields`` of /proc/PID/status that are sizes (``VmRSS``, ``VmHWM``...) in KiB.

    Raises ``OSError`` once the process is gone, or has exited and not been waited for
    (a zombie has no memory fields): the caller decides whether that ends the run or
    only a sample."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in fields:
            values[key] = int(rest.split()[0])
    missing = [field for field in fields if field not in values]
    if missing:
        raise ProcessLookupError(f"process {pid} has exited: no {', '.join(missing)}")
    return values


def rss_mib(pid: int) -> float:
    """Resident memory of a live process in MiB."""
    return status_kib(pid, "VmRSS")["VmRSS"] / 1024


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a live process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
