"""A one-second cache of the rendered store pages (live view, history, detail).

Every operator screen on a line shows the same few pages, and a page costs the server a
few milliseconds of one core (the query, then Jinja escaping a few thousand cells), so
a hundred screens opening together queue behind each other for a second or more (see
``benchmarks/web_load.py``). A page built less than ``ttl_s`` ago is sent again instead:
within that second every viewer of one URL shares one render, and viewers arriving
together wait for the one render in progress rather than each starting their own; once
a page is older, the next viewer renders it anew while the others still get the old one.

What a page may lag by is at most ``ttl_s`` and one render: the live view's stream sends the current
cards on connecting, the daemon banner polls ``/api/heartbeat`` (never cached), and a
write through this server (a review, an alert retry) empties the cache, so the page an
operator is sent to after saving shows the save. The key holds everything a page's
HTML depends on besides the store: the path and query, and whether the viewer is
authorised and has a session (the banner and the log-out button). Only 200 answers are
kept, at most ``max_pages`` of them.

The route wrapper that keys and asks this cache is ``asgi.cached``. A fresh page, and an
older one while its new render is waiting or under way, is answered on the event loop
itself; only a page to render goes to a worker thread, through the app's
``render_queue.RenderQueue`` (a few at a time, the page most viewers wait for first).
Under a hundred viewers nearly every answer is a kept page, and the hop to a worker
thread and back was most of what one cost.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.responses import Response

TTL_S = 1.0
MAX_PAGES = 256


@dataclass(frozen=True)
class Rendered:
    """A page's answer held in memory, sent to each viewer as a response of their own
    (kept here, or shared by a render's viewers in ``render_queue``)."""

    status: int
    body: bytes
    media_type: str | None
    headers: dict[str, str]

    @classmethod
    def of(cls, response: Response) -> Rendered:
        headers = {k: v for k, v in response.headers.items() if k != "content-length"}
        return cls(response.status_code, bytes(response.body), response.media_type, headers)

    def response(self) -> Response:
        return Response(self.body, self.status, self.headers, self.media_type)


@dataclass(frozen=True)
class Kept:
    page: Rendered  # a 200
    expires: float

    def response(self) -> Response:
        return self.page.response()


class PageCache:
    """Rendered pages by key, each for ``ttl_s``; thread-safe, one per web app."""

    def __init__(self, ttl_s: float = TTL_S, max_pages: int = MAX_PAGES) -> None:
        self.ttl_s = ttl_s
        self.max_pages = max_pages
        self._pages: OrderedDict[tuple, Kept] = OrderedDict()
        self._building: dict[tuple, threading.Lock] = {}
        self._lock = threading.Lock()
        self._generation = 0  # counts clears

    def _lookup(self, key: tuple) -> tuple[Kept | None, bool, threading.Lock]:
        """(the kept page or None, whether it is still fresh, the key's build lock)."""
        with self._lock:
            kept = self._pages.get(key)
            building = self._building.setdefault(key, threading.Lock())
        return kept, kept is not None and kept.expires > time.monotonic(), building

    def fresh(self, key: tuple) -> Response | None:
        """The kept page for ``key`` if it is still fresh, else None; never blocks, so the
        event loop may ask."""
        with self._lock:
            kept = self._pages.get(key)
        if kept is None or kept.expires <= time.monotonic():
            return None
        return kept.response()

    def kept(self, key: tuple) -> Response | None:
        """The kept page for ``key`` however old, else None; never blocks. The event loop
        answers with it while another viewer renders the page anew, as ``get`` would."""
        with self._lock:
            kept = self._pages.get(key)
        return None if kept is None else kept.response()

    def get(self, key: tuple, build: Callable[[], Response]) -> Response:
        """The kept page for ``key``, else ``build()``'s (kept when it is a 200).

        An expired page is rebuilt by the first viewer to ask; viewers arriving during
        that render get the expired one (at most one render old) rather than queueing
        behind it. With no page kept at all, they wait for the one render.
        """
        if self.ttl_s <= 0:
            return build()
        kept, fresh, building = self._lookup(key)
        if not fresh and building.acquire(blocking=kept is None):
            try:
                kept, fresh, _ = self._lookup(key)  # another thread may have just built it
                if not fresh:
                    generation = self._generation
                    response = build()
                    if response.status_code != 200:
                        return response
                    kept = self._keep(key, response, generation)
            finally:
                building.release()
        if len(self._building) > 4 * self.max_pages:  # keys of pages never kept (errors)
            with self._lock:
                self._building.clear()
        assert kept is not None
        return kept.response()

    def _keep(self, key: tuple, response: Response, generation: int) -> Kept:
        """Keep ``response`` unless the cache was cleared while it was rendered (it may
        hold what the store had before the write that cleared it)."""
        kept = Kept(Rendered.of(response), time.monotonic() + self.ttl_s)
        with self._lock:
            if generation != self._generation:
                return kept
            self._pages[key] = kept
            self._pages.move_to_end(key)
            while len(self._pages) > self.max_pages:
                old, _ = self._pages.popitem(last=False)
                self._building.pop(old, None)
        return kept

    def clear(self) -> None:
        """Forget every page: the store was just changed through this server."""
        with self._lock:
            self._pages.clear()
            self._generation += 1
