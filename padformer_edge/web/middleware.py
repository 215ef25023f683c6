"""What every request passes before any route: the Host check, the token, the headers.

Two plain ASGI middlewares (not ``BaseHTTPMiddleware``, which would buffer the event
stream): ``Headers`` outermost, so even a refusal carries the strict
Content-Security-Policy (scripts and styles from this server only, no inline code),
``nosniff``, no framing and ``Cache-Control: no-store`` unless a route chose otherwise;
then ``Gate``: it first believes the ``X-Forwarded-*`` headers of a trusted proxy
(``proxies``); on a loopback bind the ``Host`` must name this machine (421), and with a
token or named users every path but the login form and the static files needs the
shared bearer token or a logged-in session (401: the login form for a browser, one
sentence for a script). Once users exist only a named login opens a session: a session
of the shared token, or of a user since removed or given a new token, no longer counts,
and the request's ``state.person`` says who is logged in (``None`` for the shared
token, which may read but not review; a user limited to lines carries them, as the
list has them now: ``scope``). A
wrong bearer token counts against the client's address in the same throttle as the
login form, so a script cannot guess past the form's limit on the other path: past the
limit every bearer request from that address waits (429), right token or not, and each
failure and refusal is logged with the client's address.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from padformer_edge.reporting.log import get_logger
from padformer_edge.web import auth
from padformer_edge.web.responses import page, text
from padformer_edge.web.sessions import COOKIE

if TYPE_CHECKING:
    from padformer_edge.web.people import Person
    from padformer_edge.web.webapp import WebApp

log = get_logger("web")
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
        "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
}
PUBLIC_PREFIXES = ("/static/",)
PUBLIC_PATHS = ("/login",)


class Headers:
    """Adds the security headers to every HTTP response, a failure's too: an exception
    nothing inside handled (the routes' own are turned into a sentence by ``guarded``)
    is answered here, logged once, rather than by Starlette's outermost error layer,
    which would send its 500 without them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def with_headers(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if "cache-control" not in headers:
                    headers["Cache-Control"] = "no-store"
            await send(message)

        try:
            await self.app(scope, receive, with_headers)
        except Exception as err:
            if started:  # half a response is out: nothing to answer with, let it end
                raise
            log.error("web.error", path=scope.get("path", ""),
                      error=f"{type(err).__name__}: {err}", exc_info=err)  # fmt: skip
            answer = text(500, "internal error; the server log has details.")
            await answer(scope, receive, with_headers)


def admitted(web: WebApp, conn: HTTPConnection) -> tuple[bool, bool, Person | None]:
    """(may see the page, is a logged-in browser session, the named user logged in, with
    the lines the user list gives them now); a bearer token offered is judged by
    ``Gate._bearer`` first. Asked by the gate of every request, and again by an open
    event stream at each poll (``events``), so a stream follows its viewer's lines."""
    token, named = web.token, web.people.exist()
    if token is None and not named:
        return True, False, None
    if token is not None and auth.token_matches(auth.bearer_token(conn), token):
        return True, False, None
    opened = web.sessions.holder(conn.cookies.get(COOKIE))
    if opened is None:
        return False, False, None
    if opened.person is None:  # a shared-token login: only while no user exists
        return not named, not named, None
    current = web.people.refreshed(opened.person)  # with the lines given now
    return current is not None, current is not None, current


class Gate:
    """Refuses a foreign Host and, with a token, anyone who has not proved it."""

    def __init__(self, app: ASGIApp, web: WebApp) -> None:
        self.app = app
        self.web = web

    def _bearer(self, conn: HTTPConnection) -> Response | None:
        """A 429 while this client is throttled, or a 401 for a wrong bearer token (counted
        and logged); ``None`` when no token is offered or it is the right one."""
        token, given = self.web.token, auth.bearer_token(conn)
        if token is None or given is None:
            return None
        client = auth.client_of(conn)
        throttle = self.web.throttle
        wait = throttle.retry_after(client)
        if wait > 0:
            seconds = math.ceil(wait)
            log.warning("web.login_throttled", client=client, retry_after_s=seconds, via="bearer")
            return text(
                429,
                f"too many failed tokens from {client}; try again in {seconds} s.",
                {"Retry-After": str(seconds)},
            )
        if auth.token_matches(given, token):
            return None
        failures = throttle.failed(client)
        log.warning("web.login_failed", client=client, failures=failures,
                    limit=throttle.max_failures, via="bearer")  # fmt: skip
        return text(
            401,
            "the bearer token is wrong; send the configured token or log in at /login.",
            {"WWW-Authenticate": 'Bearer realm="padformer-edge", error="invalid_token"'},
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        self.web.proxies.apply(scope)
        conn = HTTPConnection(scope)
        if self.web.loopback and not auth.host_is_local(conn):
            refused = text(
                421,
                "this server answers only to 127.0.0.1 or localhost; a reverse proxy must "
                "pass its upstream Host and send the public one as X-Forwarded-Host.",
            )
            await refused(scope, receive, send)
            return
        if self.web.people.stale():
            await run_in_threadpool(self.web.people.current)
        bearer = self._bearer(conn)
        if bearer is not None:
            await bearer(scope, receive, send)
            return
        allowed, session, person = admitted(self.web, conn)
        state = scope.setdefault("state", {})
        state["authorised"], state["session"], state["person"] = allowed, session, person
        path = scope["path"]
        public = path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIXES)
        if not allowed and not public:
            await self._refuse(Request(scope, receive))(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _refuse(self, request: Request) -> Response:
        if request.method == "GET" and "text/html" in request.headers.get("accept", ""):
            query = request.url.query
            target = auth.safe_next(request.url.path + (f"?{query}" if query else ""))
            return page(request, "login.html", 401, failed=None, wait=None, next=target,
                        named=self.web.people.exist())  # fmt: skip
        return text(
            401,
            "a token is required; send 'Authorization: Bearer TOKEN' or log in at /login.",
            {"WWW-Authenticate": 'Bearer realm="padformer-edge"'},
        )
