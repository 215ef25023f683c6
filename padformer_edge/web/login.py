"""Logging in and out of the page when it has a token or named users.

Once users exist (``padformer-edge users add``) a person logs in with their name and
their own token (checked against its scrypt hash, ``store.tokens``), and the session
remembers who they are; the shared token is then for scripts only and opens no
session. While no user exists the shared token logs in as before. Either way a login
opens a session (``sessions``): the browser gets a signed random id, never the token.
Every failure (a wrong token, name or personal token) is logged with the client's
address and counted (``throttle``); past the limit the client waits, right token or
not, and the wait is logged and told in seconds (a wrong bearer token counts in the
same throttle: ``middleware.Gate``). A post from another site's page (an ``Origin``
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

from padformer_edge.reporting.log import get_logger
from padformer_edge.web import auth
from padformer_edge.web.people import Person
from padformer_edge.web.responses import page, read_form, text, web_app
from padformer_edge.web.sessions import COOKIE

log = get_logger("web")


CROSS_SITE = "this request did not come from this server's own page."


SHARED_TOKEN = "The shared token is for scripts; log in with your name and your own token."


def _form(request: Request, code: int = 200, headers: dict[str, str] | None = None,
          **context: object) -> Response:  # fmt: skip
    """The login form: a name field once users exist."""
    named = web_app(request).people.exist()
    context = {"failed": None, "wait": None, **context}
    return page(request, "login.html", code, headers, named=named, **context)


async def login_form(request: Request) -> Response:
    target = auth.safe_next(request.query_params.get("next"))
    return await run_in_threadpool(_form, request, next=target)


async def login(request: Request) -> Response:
    app = web_app(request)
    if auth.cross_site(request):
        log.warning("web.login_cross_site", client=auth.client_of(request),
                    origin=request.headers.get("origin"))  # fmt: skip
        return text(403, CROSS_SITE)
    form = await read_form(request)
    target = auth.safe_next(form.get("next"))
    named = await run_in_threadpool(app.people.exist)
    if app.token is None and not named:
        return RedirectResponse(target, 303)
    client = auth.client_of(request)
    wait = app.throttle.retry_after(client)
    if wait > 0:
        seconds = math.ceil(wait)
        log.warning("web.login_throttled", client=client, retry_after_s=seconds)
        return await run_in_threadpool(
            _form, request, 429, {"Retry-After": str(seconds)}, wait=seconds, next=target
        )
    name, token = form.get("name", "").strip(), form.get("token", "")
    person: Person | None = None
    if named and not name and app.token is not None and auth.token_matches(token, app.token):
        log.warning("web.login_shared_token_refused", client=client)
        return await run_in_threadpool(_form, request, 401, failed=SHARED_TOKEN, next=target)
    if named:
        person = await run_in_threadpool(app.people.authenticate, name, token)
        right = person is not None
    else:
        right = auth.token_matches(token, app.token)  # type: ignore[arg-type]
    if not right:
        failures = app.throttle.failed(client)
        log.warning("web.login_failed", client=client, failures=failures,
                    limit=app.throttle.max_failures, user=name[:64] or None)  # fmt: skip
        wrong = "That name and token do not match." if named else "That token is not right."
        return await run_in_threadpool(_form, request, 401, failed=wrong, next=target)
    response = RedirectResponse(target, 303)
    response.set_cookie(COOKIE, app.sessions.open(person), max_age=int(app.sessions.max_age_s),
                        path="/", httponly=True, samesite="Strict",
                        secure=auth.is_https(request))  # type: ignore[arg-type]  # fmt: skip
    log.info("web.login", client=client, user=person.name if person else None)
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
