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


class _MallInfo2(ctypes.Structure):
    """glibc's ``struct mallinfo2`` (2.33 and later): every field a ``size_t``."""

    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",  # bytes of heap obtained with sbrk (the main heap)
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",  # bytes in blocks mapped on their own
            "usmblks",
            "fsmblks",
            "uordblks",  # bytes in use
            "fordblks",  # bytes free inside the heap
            "keepcost",
        )
    ]


def heap_usage() -> dict[str, int] | None:
    """Bytes of malloc's heap in use and free (``mallinfo2``), or None off glibc.

    Free bytes inside the heap are memory the process holds without using: with the
    trim threshold of ``retain_freed_memory`` they stay resident until
    ``release_free_memory`` hands their pages back."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.argtypes, mallinfo2.restype = [], _MallInfo2
    info = mallinfo2()
    return {
        "heap": info.arena + info.hblkhd,
        "in_use": info.uordblks + info.hblkhd,
        "free": info.fordblks,
    }


def release_free_memory() -> bool:
    """Hand the pages of every free heap block back to the kernel (``malloc_trim(0)``);
    True when some were.

    ``retain_freed_memory`` keeps freed memory for reuse, which is right between two
    detections but lets the heap's holes accumulate: blocks of varying size (batches of
    1 to ``max_batch`` images) that no longer fit a hole take new pages at the heap's
    top, and the holes stay resident for good. A long-running daemon calls this every
    few minutes (``padformer_edge.daemon.memory``): the next detection faults its
    working set in once again, a fraction of a second, and what stays resident is what
    is in use."""
    if os.environ.get(DISABLE_VARIABLE, "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        malloc_trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return False
    malloc_trim.argtypes, malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    return bool(malloc_trim(0))
