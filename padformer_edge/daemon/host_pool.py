"""The worker's per-image host work (reading and decoding a camera file, drawing and
encoding its heatmap) spread over ``worker.host_threads`` threads.

Threads, not processes: that work is almost all OpenCV (``imdecode``, ``resize``,
``imencode``) and zlib, which release the GIL, so threads use more than one core
without copying megapixel images between processes, and the rows, the store and the
alerts stay in the worker's own threads. The pool only computes: each item's result or
its exception comes back in the items' order, and the caller records failures and
commits, so what a row goes through (its heatmap in place before its commit, exactly one
end per row) is the same with one thread or many.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def attempt(work: Callable[[T], R], item: T) -> R | Exception:
    """``work(item)``, or the exception it raised: one image's failure is its own."""
    try:
        return work(item)
    except Exception as err:
        return err


class HostPool:
    """``threads`` threads shared by the decoding of a batch and the heatmaps of
    another (the two may run at once: the pool's queue is thread-safe and no item waits
    for another, so neither can block the other for good). With one thread the work
    runs in the caller's thread, as before the pool existed."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self._pool: ThreadPoolExecutor | None = None

    def map(self, work: Callable[[T], R], items: Sequence[T]) -> list[R | Exception]:
        """``work`` of each item, results (or exceptions) in the items' order."""
        if self.threads <= 1 or len(items) <= 1:
            return [attempt(work, item) for item in items]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="host")
        futures = [self._pool.submit(attempt, work, item) for item in items]
        return [future.result() for future in futures]

    def close(self) -> None:
        """Wait for what was handed over, then end the threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
