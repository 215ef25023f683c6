"""Keep freed heap memory mapped in long-running processes (glibc only).

A detection allocates and frees tens of megabytes of short-lived tensors. By default
glibc's malloc hands big freed blocks straight back to the kernel (blocks above its
mmap threshold are unmapped, and a large free heap top is trimmed), so the next
detection page-faults the same memory in again, zero-filled, page by page: about 40,000
minor faults per small-preset detection on one CPU thread, a quarter of its CPU time
(``benchmarks/allocator.py``). Fixing both thresholds keeps that memory in the
process for reuse. The cost is that the process holds on to its peak working set,
which a detector or trainer that runs for months needs again every few seconds anyway.

Threads normally get malloc arenas of their own, which shrink by rules of their own;
the daemon runs the model on a worker thread, so one arena is used for the whole
process (the model's threads allocate little, so they hardly contend for it). This
must run before the first threads allocate, which is why the CLI calls it first.

Other allocators (musl, or jemalloc/tcmalloc preloaded) leave this a harmless no-op;
``PADFORMER_EDGE_MALLOC_TUNING=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
MMAP_THRESHOLD = 32 << 20
"""Blocks up to 32 MiB (glibc's largest accepted value on 64-bit) come from the heap."""
TRIM_THRESHOLD = 1 << 30
"""Free heap top is returned to the kernel only beyond 1 GiB."""
DISABLE_VARIABLE = "PADFORMER_EDGE_MALLOC_TUNING"


@functools.cache
def retain_freed_memory() -> bool:
    """Set glibc's arena count, mmap and trim thresholds once; True when they took effect."""
    if os.environ.get(DISABLE_VARIABLE, "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settings = (
        (M_ARENA_MAX, 1),
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD),
    )
    return all(mallopt(option, value) == 1 for option, value in settings)
