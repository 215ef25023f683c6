"""The worker's helpers that run beside detection: one thread decodes the next batch, one
writes the last batch's heatmaps and commits its results.

On a GPU the detector's call is short, and decoding camera files before it and encoding
PNG heatmaps after it (both on the CPU, both releasing the GIL inside OpenCV) would
otherwise leave the GPU idle for as long again. Each helper is one thread, so each keeps
its order: results commit in the order their batches were detected, a batch is decoded
before the next one starts. Neither changes what a row goes through: a heatmap is still
in place before its row's commit, and a row is ``processing`` from its claim until that
commit, so a kill at any moment leaves it for the next start to requeue, as before.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from padformer_edge.reporting.log import get_logger

log = get_logger("worker")
T = TypeVar("T")


class Finisher:
    """A thread that runs the jobs handed to it one at a time, in order.

    ``depth`` jobs may wait: with 1, the worker can detect one batch ahead of the
    commits and no further, so a slow disk slows detection down instead of letting
    detected batches pile up in memory.
    """

    def __init__(self, depth: int = 1) -> None:
        self._jobs: queue.Queue[Callable[[], None] | None] = queue.Queue(maxsize=depth)
        self._thread: threading.Thread | None = None
        self._failure: BaseException | None = None

    def submit(self, job: Callable[[], None]) -> None:
        """Queue ``job``; blocks while ``depth`` jobs already wait."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="finisher", daemon=True)
            self._thread.start()
        self._jobs.put(job)

    def drain(self) -> None:
        """Return once every job handed over so far has run."""
        if self._thread is not None:
            self._jobs.join()

    def raise_failure(self) -> None:
        """Raise (once) what a job failed with: a job fails only when even recording its
        rows' failure did (the database is away), and then the worker must give its
        claimed rows back, as it does when its own thread meets such an error."""
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Run what is queued, then end the thread."""
        if self._thread is not None:
            self._jobs.put(None)
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            try:
                job()
            except Exception as err:  # each row's failure is recorded inside the job
                log.error("worker.finish_failed", error=f"{type(err).__name__}: {err}")
                self._failure = err
            finally:
                self._jobs.task_done()
        self._jobs.task_done()


class Ahead:
    """One thread that prepares (claims are the worker's; decoding is this) the next batch."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None

    def start(self, work: Callable[[], T]) -> Future[T]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="decode-ahead")
        return self._pool.submit(work)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
