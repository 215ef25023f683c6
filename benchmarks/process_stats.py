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


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name (which may hold spaces): field 3 onwards."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def descendants(pid: int) -> list[int]:
    """The live processes below ``pid`` (children, their children...), from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int(_stat_fields(int(entry.name))[1])
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
        parents.setdefault(parent, []).append(int(entry.name))
    found, queue = [], [pid]
    while queue:
        for child in parents.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of ``pid`` and every process below it: the live ones'
    own, and (``cutime``/``cstime``) those of children that ended and were waited for. A
    daemon that starts helpers (a probe, an alert command) is charged for them too."""
    ticks = 0
    for member in [pid, *descendants(pid)]:
        try:
            fields = _stat_fields(member)
        except OSError:
            if member == pid:
                raise
            continue  # a helper that ended between the listing and this read
        ticks += sum(int(fields[index]) for index in (11, 12, 13, 14))
    return ticks / os.sysconf("SC_CLK_TCK")
