"""Pages waiting to be rendered, the page most viewers wait for rendered first.

A page the page cache (``page_cache``) cannot answer is rendered in a worker thread, at
most ``slots`` at a time: renders are mostly Python, which runs one thread at a time
whatever the cores, so forty rendered together each took forty times as long and all
finished late, where two at a time overlap one page's database waits with the other's
Python. Every render thread more also shares the interpreter lock with the event loop,
which answers the kept pages most viewers get: with four render threads a kept page
took 40 to 60 ms in a burst, with three 10 to 30 ms.

Which page goes next when a slot frees is the one the most viewers are waiting for,
the earliest asked among equals, and the last ``shared_slots`` slots are only for a page
more than one viewer waits for. When a hundred screens open together, a third of them
ask for pages nobody else wants (an older history page, one inspection) and the rest
share a few pages (a line's newest rows, its reviewed rows); in the order asked, a
shared page waited behind every single-viewer render asked before it, and its dozen
viewers with it. With a slot of its own it starts as soon as its second viewer asks and
answers them all after one render, while single-viewer pages go on in the other slots.
A shared page is kept for a page-cache second after its render, so it comes back to the
queue at most once a second and a page with one viewer is never put off for long.

A viewer asking for a page that is already waiting or rendering joins that render
instead of starting its own, and waits on the event loop, holding no thread. A viewer
gone before its render started takes the render with it when nobody else waits for
it. Everything here runs on the event loop (one per server), so nothing is locked.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Hashable
from dataclasses import dataclass

from anyio import to_thread
from starlette.responses import Response

from padformer_edge.web.page_cache import Rendered


@dataclass(eq=False)
class _Job:
    key: Hashable
    build: Callable[[], Response]
    asked: int  # the order it was asked in, the tie-break between equal numbers of viewers
    done: asyncio.Future[Rendered]
    viewers: int = 0
    started: bool = False


class RenderQueue:
    """At most ``slots`` renders at a time, the page with the most viewers first; the
    last ``shared_slots`` of them only for pages more than one viewer waits for."""

    def __init__(self, slots: int, shared_slots: int = 0) -> None:
        if slots < 1 or not 0 <= shared_slots < slots:
            raise ValueError(
                "a render queue needs at least one slot, and one more than it keeps for "
                f"shared pages; not {slots} and {shared_slots}"
            )
        self.slots = slots
        self.shared_slots = shared_slots
        self._running = 0
        self._jobs: dict[Hashable, _Job] = {}  # waiting or rendering, by page key
        self._waiting: list[_Job] = []
        self._asked = itertools.count()
        self._tasks: set[asyncio.Task[None]] = set()  # held until done (the loop keeps weak refs)

    def busy(self, key: Hashable) -> bool:
        """Whether a render of ``key`` is waiting or under way."""
        return key in self._jobs

    async def render(self, key: Hashable, build: Callable[[], Response]) -> Response:
        """``build()``'s answer for ``key`` (run in a worker thread once a slot is free),
        or the answer of the render of ``key`` already waiting or under way."""
        job = self._jobs.get(key)
        if job is None:
            done: asyncio.Future[Rendered] = asyncio.get_running_loop().create_future()
            # A render nobody waits for any more may fail unseen: not an error to log.
            done.add_done_callback(lambda f: f.cancelled() or f.exception())
            job = _Job(key, build, next(self._asked), done)
            self._jobs[key] = job
            self._waiting.append(job)
        job.viewers += 1
        self._start()
        try:
            rendered = await asyncio.shield(job.done)
        finally:
            job.viewers -= 1
            if not job.started and job.viewers == 0:  # everyone gone before it started
                self._waiting.remove(job)
                del self._jobs[key]
        return rendered.response()

    def _start(self) -> None:
        """Start the waiting renders with the most viewers while slots are free (a
        page one viewer waits for leaves the shared slots free)."""
        while self._waiting:
            job = max(self._waiting, key=lambda j: (j.viewers, -j.asked))
            room = self.slots if job.viewers > 1 else self.slots - self.shared_slots
            if self._running >= room:  # the best waiting job cannot start: nor can the rest
                return
            self._waiting.remove(job)
            job.started = True
            self._running += 1
            task = asyncio.get_running_loop().create_task(self._run(job))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, job: _Job) -> None:
        try:
            response = await to_thread.run_sync(job.build)
            job.done.set_result(Rendered.of(response))
        except asyncio.CancelledError:  # the server stopping: its viewers are cut off too
            job.done.cancel()
            raise
        except Exception as err:  # every viewer gets the failure, as one alone would
            job.done.set_exception(err)
        finally:
            self._running -= 1
            del self._jobs[job.key]
            self._start()
