"""The Starlette app over a ``WebApp`` (``webapp``): its routes, error pages and wrappers.

Requests pass, in order: the security headers (``middleware.Headers``, on every reply),
the Host and token checks (``middleware.Gate``), then Starlette's router: an unknown
path is 404, a known path with another method 405 (GET routes answer HEAD too), the
static files come from Starlette's ``StaticFiles`` over the package folder. Every
handler is wrapped by ``guarded``: a bad filter is a 400 with its sentence, a database
not readable yet a 503, a client gone in the middle of its form a debug line, a bug a
500 with the details in the log only.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import Scope

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.web import events, login, pages
from padformer_edge.web.middleware import Gate, Headers
from padformer_edge.web.responses import TooLarge, authorised, error, web_app
from padformer_edge.web.webapp import Unavailable, WebApp

log = get_logger("web")
Handler = Callable[[Request], Response | Awaitable[Response]]


class RowId(Convertor[int]):
    """A database id in a path: at most 18 digits, so it always fits a 64-bit integer
    (a longer one is 404, not an overflow inside the database driver)."""

    regex = "[0-9]{1,18}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("row_id", RowId())


class CachedStatic(StaticFiles):
    """The package's script and style sheet, cacheable for five minutes. A name with a
    control character is no file of ours: 404 before the file system is asked (issue 51:
    ``/static/%00`` reached ``os.stat``, whose ValueError answered 500)."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        if any(ord(c) < 32 or ord(c) == 127 for c in path):
            raise HTTPException(404)
        response = await super().get_response(path, scope)
        if response.status_code == 200:
            response.headers["Cache-Control"] = "public, max-age=300"
        return response


def cached(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """``handler`` (a plain page function) answered from the app's ``PageCache``: a
    fresh page at once, the last one at once while another viewer's render of it is
    waiting or under way, else rendered in a worker thread by the app's ``RenderQueue``
    (a few pages at a time, the page most viewers wait for first), a viewer of a page
    already waiting joining that render on the event loop."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        state = request.scope.get("state", {})
        key = (
            request.url.path,
            request.url.query,
            "text/html" in request.headers.get("accept", ""),
            authorised(request),
            bool(state.get("session", False)),
            getattr(state.get("person"), "name", None),  # a named user's own form and header
            getattr(state.get("person"), "lines", None),  # the lines they may see, as now
            web_app(request).people.exist(),  # the review form differs once users exist
        )
        request.scope.setdefault("state", {})["kept"] = True  # ``responses.kept``
        web = web_app(request)
        pages = web.page_cache
        kept = pages.fresh(key)
        if kept is not None:
            return kept
        if web.renders.busy(key):  # another viewer's render: the page kept meanwhile
            kept = pages.kept(key)
            if kept is not None:
                return kept
        return await web.renders.render(key, lambda: pages.get(key, lambda: handler(request)))

    return run


def _failure(request: Request, err: Exception) -> Response:
    if isinstance(err, ClientDisconnect):  # gone while sending a body: nobody to tell
        log.debug("web.client_gone", path=request.url.path)
        return Response(status_code=400)
    if isinstance(err, Unavailable):
        return error(request, 503, str(err))
    if isinstance(err, TooLarge):
        return error(request, 413, str(err))
    if isinstance(err, UserError):
        return error(request, 400, str(err))
    log.error("web.error", path=request.url.path, error=f"{type(err).__name__}: {err}",
              exc_info=err)  # fmt: skip
    return error(request, 500, "internal error; the server log has details.")


def guarded(handler: Handler) -> Handler:
    """The handler, with a user's mistake or a bug turned into one sentence."""
    if inspect.iscoroutinefunction(handler):

        @functools.wraps(handler)
        async def run_async(request: Request) -> Response:
            try:
                return await handler(request)  # type: ignore[misc]
            except Exception as err:
                return _failure(request, err)

        return run_async

    @functools.wraps(handler)
    def run(request: Request) -> Response:
        try:
            return handler(request)  # type: ignore[return-value]
        except Exception as err:
            return _failure(request, err)

    return run


def _routes() -> list[BaseRoute]:
    get: list[tuple[str, Handler]] = [
        ("/", cached(pages.live)),
        ("/api/live", pages.live_json),
        ("/api/heartbeat", pages.heartbeat_json),
        ("/events", events.events),
        ("/history", cached(pages.history)),
        ("/history.{fmt}", pages.export),
        ("/inspections/{inspection_id:row_id}", cached(pages.detail)),
        ("/media/{inspection_id:row_id}/{kind}", pages.media),
        ("/thumbs/{inspection_id:row_id}/{kind}", pages.thumbnail),
        ("/candidates", cached(pages.candidates)),
        ("/candidates/{candidate_id:row_id}/image", pages.candidate_image),
        ("/health", pages.health),
        ("/plant", cached(pages.plant)),
        ("/metrics", pages.metrics),
        ("/login", login.login_form),
    ]
    post: list[tuple[str, Handler]] = [
        ("/login", login.login),
        ("/logout", login.logout),
        ("/alerts/{alert_id:row_id}/retry", pages.retry),
        ("/inspections/{inspection_id:row_id}/review", pages.review),
        ("/candidates/{candidate_id:row_id}/decision", pages.decide_candidate),
    ]
    routes: list[BaseRoute] = [Route(p, guarded(h), methods=["GET"]) for p, h in get]
    routes += [Route(p, guarded(h), methods=["POST"]) for p, h in post]
    routes.append(Mount("/static", CachedStatic(packages=[("padformer_edge.web", "static")])))
    return routes


async def _http_error(request: Request, exc: Exception) -> Response:
    """Starlette's 404 and 405 (no route, wrong method) as this app's one sentence; in
    the thread pool, since a browser's error page reads the daemon banner."""
    status = exc.status_code if isinstance(exc, HTTPException) else 500
    if status == 405:
        message = f"{request.method} is not allowed on {request.url.path}."
    elif status == 404:
        message = "there is no such page."
    else:
        message = str(getattr(exc, "detail", "")) or "request refused."
    return await run_in_threadpool(error, request, status, message)


def asgi_app(web: WebApp) -> Starlette:
    """The Starlette app over ``web``: the security headers outermost, then the gate, then
    the routes; handlers find ``web`` on the app's state (``responses.web_app``)."""
    asgi = Starlette(
        routes=_routes(),
        middleware=[Middleware(Headers), Middleware(Gate, web=web)],
        exception_handlers={HTTPException: _http_error},
    )
    asgi.state.web = web
    return asgi
