"""``WebApp``: routes, the checks every request passes, and the engines the pages read.

Order of checks on every request: the ``Host`` header (loopback binds), the token (when
one is set), then the route; anything not routed is 404 and anything but GET/HEAD is 405
except the login form and the authenticated "retry alert". Every response carries a
strict Content-Security-Policy (scripts and styles from this server only, no inline
code), ``nosniff`` and no framing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge import heartbeat
from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.store import open_engine
from padformer_edge.store.schema import open_checked
from padformer_edge.web import auth, pages
from padformer_edge.web.config import is_loopback
from padformer_edge.web.http import HTML, Request, Response, text_response
from padformer_edge.web.media import MediaRoots
from padformer_edge.web.metrics import Metrics
from padformer_edge.web.render import render

log = get_logger("web")

SECURITY_HEADERS = [
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("X-Frame-Options", "DENY"),
    ("Referrer-Policy", "same-origin"),
]
Handler = Callable[..., Response]


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
        heartbeat_file: Path | None = None,
        event_interval_s: float = 1.0,
    ) -> None:
        self.db = db
        self.media = MediaRoots(roots)
        self.token = token
        self.loopback = is_loopback(host)
        self.live_cards = live_cards
        self.heartbeat_file = heartbeat_file
        self.event_interval_s = event_interval_s
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._reader: Engine | None = None
        self._writer: Engine | None = None
        self.metrics = Metrics(self.reader, self.heartbeat_age)
        self.routes: list[tuple[str, re.Pattern[str], Handler]] = [
            ("GET", re.compile(r"/"), pages.live),
            ("GET", re.compile(r"/api/live"), pages.live_json),
            ("GET", re.compile(r"/events"), pages.events),
            ("GET", re.compile(r"/history"), pages.history),
            ("GET", re.compile(r"/history\.(?P<fmt>csv|json)"), pages.export),
            ("GET", re.compile(r"/inspections/(?P<inspection_id>[0-9]{1,18})"), pages.detail),
            ("GET", re.compile(r"/media/(?P<inspection_id>[0-9]{1,18})/(?P<kind>image|heatmap)"),
             pages.media),
            ("GET", re.compile(r"/health"), pages.health),
            ("GET", re.compile(r"/metrics"), pages.metrics),
            ("GET", re.compile(r"/static/(?P<name>[a-z]+\.(?:js|css))"), pages.static),
            ("GET", re.compile(r"/login"), pages.login_form),
            ("POST", re.compile(r"/login"), pages.login),
            ("POST", re.compile(r"/alerts/(?P<alert_id>[0-9]{1,18})/retry"), pages.retry),
        ]  # fmt: skip

    # -- the database --------------------------------------------------------------------
    def reader(self) -> Engine:
        """The read-only engine, opened on first use: under ``watch`` the daemon may still
        be creating or migrating the database when the first page is asked for."""
        with self._lock:
            if self._reader is None:
                try:
                    self._reader = open_checked(self.db)
                except UserError as err:
                    raise Unavailable(str(err)) from err
            return self._reader

    def writer(self) -> Engine:
        """A writing engine, used only by the authenticated retry endpoint."""
        with self._lock:
            if self._writer is None:
                self._writer = open_engine(self.db)
            return self._writer

    def heartbeat(self) -> dict | None:
        return heartbeat.read(self.heartbeat_file)

    def heartbeat_age(self) -> float | None:
        beat = self.heartbeat()
        return None if beat is None else float(beat["age_s"])

    def close(self) -> None:
        for engine in (self._reader, self._writer):
            if engine is not None:
                engine.dispose()

    # -- requests ------------------------------------------------------------------------
    def authenticated(self, request: Request) -> bool:
        return self.token is not None and auth.token_matches(
            auth.presented_token(request), self.token
        )

    def handle(self, request: Request) -> Response:
        response = self._route(request)
        response.headers.extend(SECURITY_HEADERS)
        if not any(name == "Cache-Control" for name, _ in response.headers):
            response.headers.append(("Cache-Control", "no-store"))
        return response

    def _route(self, request: Request) -> Response:
        if self.loopback and not auth.host_is_local(request):
            return text_response(421, "this server answers only to 127.0.0.1 or localhost.")
        public = request.path == "/login" or request.path.startswith("/static/")
        if self.token is not None and not public and not self.authenticated(request):
            return pages.unauthorised(self, request)
        method = "GET" if request.method == "HEAD" else request.method
        allowed = False
        for verb, pattern, handler in self.routes:
            match = pattern.fullmatch(request.path)
            if match is None:
                continue
            if verb != method:
                allowed = True
                continue
            return self._call(handler, request, match.groupdict())
        if allowed:
            return text_response(405, f"{request.method} is not allowed on {request.path}.")
        return self.error_page(request, 404, "there is no such page.")

    def _call(self, handler: Handler, request: Request, params: dict[str, str]) -> Response:
        args = {k: int(v) if k.endswith("_id") else v for k, v in params.items()}
        try:
            return handler(self, request, **args)
        except Unavailable as err:
            return self.error_page(request, 503, str(err))
        except UserError as err:
            return self.error_page(request, 400, str(err))
        except Exception:
            log.exception("web.error", path=request.path)
            return self.error_page(request, 500, "internal error; the server log has details.")

    def error_page(self, request: Request, status: int, message: str) -> Response:
        if "text/html" in request.headers.get("accept", ""):
            body = render("error.html", status=status, message=message, app=self, path=request.path)
            return Response(status, body, HTML)
        return text_response(status, message)
