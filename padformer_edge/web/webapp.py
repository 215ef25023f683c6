"""``WebApp``: the engines, settings and helpers one server shares, in a module of its own.

The route handlers, the middleware and the response helpers all need this type, and the
Starlette app (``asgi``) needs them; with the type in ``asgi`` they imported it back (under
``TYPE_CHECKING``) and the package formed one import circle of eight files. Here it
imports only the leaf modules it holds (media roots, metrics, the page cache, the proxy
list, the users, sessions, the throttle, thumbnails), so every other module can name it and the
graph goes one way (``tests/test_imports.py`` keeps it so, type-only imports included).
"""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.store.candidates import candidates_folder
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.heartbeat import Heartbeat, read_heartbeats
from padformer_edge.store.lines import default_line
from padformer_edge.store.outbox import backlog
from padformer_edge.store.tables import utc_now
from padformer_edge.web.config import is_loopback
from padformer_edge.web.media import MediaRoots, conversions
from padformer_edge.web.metrics import Metrics
from padformer_edge.web.page_cache import TTL_S, PageCache
from padformer_edge.web.people import People
from padformer_edge.web.proxies import TrustedProxies
from padformer_edge.web.queries import Listed, distinct_values
from padformer_edge.web.reader import open_reader
from padformer_edge.web.recent import Recent
from padformer_edge.web.render_queue import RenderQueue
from padformer_edge.web.sessions import Sessions
from padformer_edge.web.throttle import LoginThrottle
from padformer_edge.web.thumbnails import Thumbnails

# Pages rendered at once (within SQLAlchemy's pool of 5 connections), the last of them
# kept for pages several viewers wait for: Python renders one thread at a time, and each
# render thread more shares the interpreter lock with the event loop answering kept pages.
RENDERS = 3
SHARED_RENDERS = 1


class Unavailable(UserError):
    """The database cannot be read yet (not created, not migrated): 503, try again."""


class WebApp:
    """Everything one server needs; thread-safe, one instance per listening socket."""

    def __init__(
        self,
        db: str | None,
        roots: list[Path],
        *,
        token: str | None = None,
        host: str = "127.0.0.1",
        live_cards: int = 24,
        stale_after_beats: float = 3.0,
        event_interval_s: float = 1.0,
        throttle: LoginThrottle | None = None,
        sessions: Sessions | None = None,
        page_cache_s: float = TTL_S,
        trusted_proxies: list[str] | None = None,
        line_urls: dict[str, str] | None = None,
        line: str | None = None,
    ) -> None:
        self.db = db
        self.media = MediaRoots(roots)
        # candidates' pictures, copied into the state folder (``store.candidates``)
        self.candidate_media = MediaRoots([candidates_folder()])
        self.token = token
        self.loopback = is_loopback(host)
        self.live_cards = live_cards
        self.stale_after_beats = stale_after_beats
        self.event_interval_s = event_interval_s
        self.throttle = throttle or LoginThrottle()
        self.sessions = sessions or Sessions()
        self.page_cache = PageCache(page_cache_s)
        # Pages rendered at once (``asgi.cached``): a few, so that one interpreter lock is
        # not shared by forty renders, and within the reader's pool of connections; the
        # page most viewers wait for first (``render_queue``).
        self.renders = RenderQueue(RENDERS, SHARED_RENDERS)
        self.proxies = TrustedProxies(trusted_proxies or [])
        self.line_urls = dict(line_urls or {})  # each line's own page, for its pictures
        # The line whose PC this server runs on (the daemon config's ``line``, as the
        # daemon defaults it): a row of it whose picture is not here was removed from
        # this PC; one of another line is kept on that line's PC.
        self.line = line or default_line()
        self.thumbnails = Thumbnails()
        self.conversions = conversions()  # TIFFs as PNG for the detail page, made once
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._reader: Engine | None = None
        self._writer: Engine | None = None
        self.metrics = Metrics(self.reader, self.heartbeat_ages)
        self.people = People(self.reader)
        # What every page shows besides its own rows, read once per page-cache second
        # (``recent``): the history filters' lists and the banner's heartbeats and backlog.
        self.listed = {
            column: Recent(lambda column=column: distinct_values(self.reader(), column),
                           page_cache_s)
            for column in ("line", "camera", "product")
        }  # fmt: skip
        self.beats: Recent[list[Heartbeat]] = Recent(lambda: read_heartbeats(self.reader()),
                                                     page_cache_s)  # fmt: skip
        self.owed: Recent[dict[str, int]] = Recent(self._backlog, page_cache_s)

    # -- the database --------------------------------------------------------------------
    def reader(self) -> Engine:
        """The read-only engine, opened on first use: under ``watch`` the daemon may still
        be creating or migrating the database when the first page is asked for."""
        with self._lock:
            if self._reader is None:
                try:
                    self._reader = open_reader(self.db, RENDERS)
                except UserError as err:
                    raise Unavailable(str(err)) from err
            return self._reader

    def writer(self) -> Engine:
        """A writing engine, used only by the alert retry and the review forms."""
        with self._lock:
            if self._writer is None:
                self._writer = open_engine(self.db)
            return self._writer

    def _backlog(self) -> dict[str, int]:
        with reading(self.reader()) as conn:
            return backlog(conn)

    def listing(self, column: Listed) -> list[str]:
        """Every line, camera or profile in the history, at most a page-cache second old."""
        return self.listed[column].get()

    def heartbeats(self, recent: bool = False) -> list[Heartbeat]:
        """Every line's last beat, read now; with ``recent`` (a page the page cache keeps
        anyway) the rows at most a page-cache second old, each age measured now (a kept
        beat does not look younger than it is)."""
        if not recent:
            return read_heartbeats(self.reader())
        now = utc_now()
        return [replace(beat, age_s=max((now - beat.beat_at).total_seconds(), 0.0))
                for beat in self.beats.get()]  # fmt: skip

    def backlog(self, recent: bool = False) -> dict[str, int]:
        """Outbox rows each forwarding line still owes the plant database, read now; with
        ``recent`` at most a page-cache second old."""
        return self.owed.get() if recent else self._backlog()

    def forget_recent(self) -> None:
        """This server changed the store (a review, a retry, a decision): pages rendered
        from now on read it again."""
        self.page_cache.clear()
        for recent in (*self.listed.values(), self.beats, self.owed):
            recent.forget()

    def heartbeat_ages(self) -> dict[str, float]:
        """Seconds since each line's daemon last beat, by line (none yet: empty), for
        /metrics."""
        return {beat.line: beat.age_s for beat in read_heartbeats(self.reader())}

    def close(self) -> None:
        for engine in (self._reader, self._writer):
            if engine is not None:
                engine.dispose()
