"""Logging in and out of the page when it has a token.

A login checks the token in constant time and opens a session (``sessions``): the
browser gets a signed random id, never the token. Every failure is logged with the
client's address and counted (``throttle``); past the limit the client waits, right
token or not, and the wait is logged and told in seconds (a wrong bearer token counts in
the same throttle: ``middleware.Gate``). A post from another site's page (an ``Origin``
that is not this one) is refused before the token is looked at, so it cannot spend an
operator's tries. The cookie is ``Secure`` whenever the page is reached over HTTPS,
directly or through a trusted proxy. Logging out closes the session on the server, so
an old cookie opens nothing. ``next`` is followed only when it is a path on this site
(``auth.safe_next``).
"""

from __future__ import annotations

import math

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from padformer_edge.log import get_logger
from padformer_edge.web import auth
from padformer_edge.web.responses import page, read_form, text, web_app
from padformer_edge.web.sessions import COOKIE

log = get_logger("web")


CROSS_SITE = "this request did not come from this server's own page."


async def login_form(request: Request) -> Response:
    target = auth.safe_next(request.query_params.get("next"))
    return await run_in_threadpool(page, request, "login.html", failed=False, wait=None,
                                   next=target)  # fmt: skip


async def login(request: Request) -> Response:
    app = web_app(request)
    if auth.cross_site(request):
        log.warning("web.login_cross_site", client=auth.client_of(request),
                    origin=request.headers.get("origin"))  # fmt: skip
        return text(403, CROSS_SITE)
    form = await read_form(request)
    target = auth.safe_next(form.get("next"))
    if app.token is None:
        return RedirectResponse(target, 303)
    client = auth.client_of(request)
    wait = app.throttle.retry_after(client)
    if wait > 0:
        seconds = math.ceil(wait)
        log.warning("web.login_throttled", client=client, retry_after_s=seconds)
        return await run_in_threadpool(
            page, request, "login.html", 429, {"Retry-After": str(seconds)},
            failed=False, wait=seconds, next=target,
        )  # fmt: skip
    if not auth.token_matches(form.get("token"), app.token):
        failures = app.throttle.failed(client)
        log.warning("web.login_failed", client=client, failures=failures,
                    limit=app.throttle.max_failures)  # fmt: skip
        return await run_in_threadpool(page, request, "login.html", 401, failed=True, wait=None,
                                       next=target)  # fmt: skip
    response = RedirectResponse(target, 303)
    response.set_cookie(COOKIE, app.sessions.open(), max_age=int(app.sessions.max_age_s),
                        path="/", httponly=True, samesite="Strict",
                        secure=auth.is_https(request))  # type: ignore[arg-type]  # fmt: skip
    log.info("web.login", client=client)
    return response


async def logout(request: Request) -> Response:
    """Close this browser's session and clear its cookie; POST from this site only."""
    if not auth.same_origin(request):
        return text(403, CROSS_SITE)
    app = web_app(request)
    closed = app.sessions.close(request.cookies.get(COOKIE))
    log.info("web.logout", client=auth.client_of(request), had_session=closed)
    response = RedirectResponse("/login", 303)
    response.delete_cookie(COOKIE, path="/", httponly=True, samesite="Strict",
                           secure=auth.is_https(request))  # type: ignore[arg-type]  # fmt: skip
    return response
