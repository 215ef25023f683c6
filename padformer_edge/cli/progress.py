"""Progress of a long command: a bar for a person at a terminal, log lines for a pipe.

Calibrating a profile or scoring a folder can run for minutes. At a terminal the user
sees a rich bar on stderr. Anywhere else (systemd, CI, ``| tee``) a bar would be noise, so
a structured ``progress`` event is logged when the first item is done, at least every
``interval_s`` seconds while the job runs (from a background thread, so one slow image
still produces a line), and when it ends: a silent job looks exactly like a hung one.
Nothing is logged before the first item or after a failure, so a command refused early
still prints its one error line and nothing else.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from padformer_edge.reporting.log import get_logger

LOG_INTERVAL_S = 10.0


class JobProgress:
    """What a service function reports to: ``update(done, total)`` or ``advance(n)``."""

    def __init__(self, job: str, bar: Progress | None, task: TaskID | None) -> None:
        self.job = job
        self.done = 0
        self.total: int | None = None
        self.started = time.monotonic()
        self._bar = bar
        self._task = task
        self._lock = threading.Lock()

    def update(self, done: int, total: int | None = None) -> None:
        """``done`` items of ``total`` (None: unknown, or unchanged) are finished."""
        with self._lock:
            first = self.done == 0 and done > 0
            self.done = done
            if total is not None:
                self.total = total
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, completed=done, total=self.total)
        elif first:
            self.log("progress")

    def advance(self, count: int = 1) -> None:
        """``count`` more items are finished."""
        self.update(self.done + count)

    def set_total(self, total: int) -> None:
        """The job turned out to have ``total`` items."""
        self.update(self.done, total)

    def log(self, event: str) -> None:
        """One structured line: the job, items done of total, seconds since the start."""
        with self._lock:
            done, total = self.done, self.total
        elapsed = round(time.monotonic() - self.started, 1)
        get_logger("progress").info(event, job=self.job, done=done, total=total, elapsed_s=elapsed)


def _log_every(progress: JobProgress, interval_s: float, stop: threading.Event) -> None:
    """Log ``progress`` every ``interval_s`` seconds until ``stop`` is set, once its first
    item is done: a command refused before that (a broken file found while loading the
    model took longer than ``interval_s`` on a loaded machine) still prints one line."""
    while not stop.wait(interval_s):
        if progress.done > 0:
            progress.log("progress")


@contextmanager
def job_progress(
    job: str, *, console: Console | None = None, interval_s: float = LOG_INTERVAL_S
) -> Iterator[JobProgress]:
    """A ``JobProgress`` for the ``with`` block: a transient bar on a terminal, else
    ``progress`` log events (start, every ``interval_s`` seconds, end)."""
    console = console or Console(stderr=True)
    if console.is_terminal:
        columns = (TextColumn(job), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        with Progress(*columns, console=console, transient=True) as bar:
            yield JobProgress(job, bar, bar.add_task(job, total=None))
        return
    progress = JobProgress(job, None, None)
    stop = threading.Event()
    ticker = threading.Thread(target=_log_every, args=(progress, interval_s, stop), daemon=True)
    ticker.start()
    try:
        yield progress
    finally:
        stop.set()
        ticker.join()
    progress.log("progress.done")
