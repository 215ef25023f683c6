"""The render queue: viewers of one page share its render, the page most viewers wait for
is rendered first, a failure reaches every viewer, and a render nobody waits for any
more is dropped before it starts."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

import pytest
from starlette.responses import HTMLResponse, Response

from padformer_edge.web.render_queue import RenderQueue


class Builds:
    """Page builds that run in worker threads and finish when the test lets them."""

    def __init__(self) -> None:
        self.started: list[str] = []
        self.release: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def of(self, name: str, status: int = 200) -> Callable[[], Response]:
        gate = self.release.setdefault(name, threading.Event())

        def build() -> Response:
            with self._lock:
                self.started.append(name)
            if not gate.wait(10):
                raise TimeoutError(f"the test never let {name} finish")
            if status >= 500:
                raise RuntimeError(f"{name} broke")
            return HTMLResponse(f"<p>{name}</p>", status)

        return build


async def _until(condition: Callable[[], bool]) -> None:
    """Give the loop and the worker threads turns until ``condition`` holds."""
    for _ in range(2000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the condition never held")


async def _finish(builds: Builds, *renders: asyncio.Task[object]) -> None:
    """Let every held render finish, and wait for the viewers' answers."""
    for gate in builds.release.values():
        gate.set()
    await asyncio.gather(*renders)


def test_viewers_of_one_page_share_its_render_and_each_get_their_own_answer() -> None:
    async def scenario() -> None:
        queue, builds = RenderQueue(slots=1), Builds()
        viewers = [asyncio.create_task(queue.render("/", builds.of("live"))) for _ in range(5)]
        await _until(lambda: builds.started == ["live"])
        assert queue.busy("/")
        builds.release["live"].set()
        answers = await asyncio.gather(*viewers)
        assert builds.started == ["live"]  # one render for the five
        assert [a.body for a in answers] == [b"<p>live</p>"] * 5
        assert len({id(a) for a in answers}) == 5  # each viewer sends a response of its own
        assert not queue.busy("/")

    asyncio.run(scenario())


def test_the_page_most_viewers_wait_for_is_rendered_next() -> None:
    """One slot, busy; then a page one viewer asked for, then a page three viewers ask
    for: when the slot frees, the shared page goes first, the earlier single one next."""

    async def scenario() -> None:
        queue, builds = RenderQueue(slots=1), Builds()
        first = asyncio.create_task(queue.render("/a", builds.of("a")))
        await _until(lambda: builds.started == ["a"])
        single = asyncio.create_task(queue.render("/older", builds.of("older")))
        await asyncio.sleep(0)
        shared = [asyncio.create_task(queue.render("/newest", builds.of("newest")))
                  for _ in range(3)]  # fmt: skip
        await asyncio.sleep(0.05)
        assert builds.started == ["a"]  # the slot is still busy
        await _finish(builds, first, single, *shared)
        assert builds.started == ["a", "newest", "older"]

    asyncio.run(scenario())


def test_equal_waits_go_in_the_order_asked_within_the_slots() -> None:
    async def scenario() -> None:
        queue, builds = RenderQueue(slots=2), Builds()
        names = ["p1", "p2", "p3", "p4"]
        tasks = []
        for name in names:
            tasks.append(asyncio.create_task(queue.render(f"/{name}", builds.of(name))))
            await asyncio.sleep(0)
        await _until(lambda: len(builds.started) == 2)
        assert sorted(builds.started) == ["p1", "p2"]  # two slots: two at a time
        builds.release["p1"].set()
        await _until(lambda: len(builds.started) == 3)
        assert builds.started[2] == "p3"  # one viewer each: the one asked first
        for name in names:
            builds.release[name].set()
        await asyncio.gather(*tasks)
        assert builds.started[3] == "p4"

    asyncio.run(scenario())


def test_a_failed_render_reaches_every_viewer_and_the_next_ask_renders_again() -> None:
    async def scenario() -> None:
        queue, builds = RenderQueue(slots=1), Builds()
        viewers = [asyncio.create_task(queue.render("/", builds.of("bad", 500)))
                   for _ in range(3)]  # fmt: skip
        await _until(lambda: builds.started == ["bad"])
        builds.release["bad"].set()
        results = await asyncio.gather(*viewers, return_exceptions=True)
        assert all(isinstance(r, RuntimeError) and str(r) == "bad broke" for r in results)
        assert not queue.busy("/")
        builds.release["good"] = threading.Event()
        builds.release["good"].set()  # this one may finish at once
        again = await queue.render("/", builds.of("good"))
        assert again.body == b"<p>good</p>" and builds.started == ["bad", "good"]

    asyncio.run(scenario())


def test_a_render_whose_viewers_all_left_before_it_started_is_dropped() -> None:
    async def scenario() -> None:
        queue, builds = RenderQueue(slots=1), Builds()
        busy = asyncio.create_task(queue.render("/a", builds.of("a")))
        await _until(lambda: builds.started == ["a"])
        gone = asyncio.create_task(queue.render("/gone", builds.of("gone")))
        await asyncio.sleep(0)
        assert queue.busy("/gone")
        gone.cancel()  # the browser was closed while the page waited for a slot
        with pytest.raises(asyncio.CancelledError):
            await gone
        assert not queue.busy("/gone")
        builds.release["a"].set()
        await busy
        await asyncio.sleep(0.05)
        assert builds.started == ["a"]  # never rendered for nobody

    asyncio.run(scenario())


def test_a_shared_slot_is_left_for_a_page_several_viewers_wait_for() -> None:
    """Two slots, one kept for shared pages: a second single-viewer page waits while one
    renders, but a page two viewers want starts beside it at once."""

    async def scenario() -> None:
        queue, builds = RenderQueue(slots=2, shared_slots=1), Builds()
        first = asyncio.create_task(queue.render("/older/1", builds.of("older-1")))
        await _until(lambda: builds.started == ["older-1"])
        second = asyncio.create_task(queue.render("/older/2", builds.of("older-2")))
        shared = [asyncio.create_task(queue.render("/newest", builds.of("newest")))
                  for _ in range(2)]  # fmt: skip
        await _until(lambda: builds.started == ["older-1", "newest"])
        await asyncio.sleep(0.05)
        assert builds.started == ["older-1", "newest"]  # the single page still waits
        await _finish(builds, first, second, *shared)
        assert builds.started == ["older-1", "newest", "older-2"]

    asyncio.run(scenario())


def test_a_queue_needs_a_slot_for_single_viewers() -> None:
    for slots, shared in ((0, 0), (2, 2), (2, -1)):
        with pytest.raises(ValueError, match="at least one slot"):
            RenderQueue(slots=slots, shared_slots=shared)
