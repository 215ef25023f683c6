"""The responses pages send: a rendered template, a one-sentence error, a form body.

Starlette's response classes do the HTTP; these helpers only add what every page of
this app shares: the daemon banner and login state in each template's context, the
error page a browser sees (plain text for scripts), and a size-capped form reader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response

from padformer_edge.errors import UserError
from padformer_edge.web.daemon_state import daemon_state
from padformer_edge.web.render import render

if TYPE_CHECKING:
    from padformer_edge.web.people import Person
    from padformer_edge.web.webapp import WebApp

MAX_FORM_BYTES = 64 * 1024


class TooLarge(UserError):
    """A request body over the cap: 413, one sentence."""


def web_app(request: Request) -> WebApp:
    """The ``WebApp`` behind this request (set on the Starlette app's state)."""
    return request.app.state.web


def authorised(request: Request) -> bool:
    """Set by the gate: no token is configured, or this request proved it."""
    return bool(request.scope.get("state", {}).get("authorised", False))


def person_of(request: Request) -> Person | None:
    """The named user logged in (set by the gate); ``None`` for anyone else."""
    return request.scope.get("state", {}).get("person")


def kept(request: Request) -> bool:
    """Set by ``asgi.cached``: this page is kept by the page cache, so what it shows may be
    a page-cache second old (``recent``)."""
    return bool(request.scope.get("state", {}).get("kept", False))


def lines_of(request: Request) -> frozenset[str] | None:
    """The lines this viewer is limited to (``scope``); ``None``: every line."""
    person = person_of(request)
    return person.lines if person is not None and person.limited else None


def text(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    return PlainTextResponse(message.rstrip("\n") + "\n", status, headers)


def page(
    request: Request,
    template: str,
    code: int = 200,
    headers: dict[str, str] | None = None,
    **context: Any,
) -> HTMLResponse:
    """A template with what ``base.html`` needs; the daemon banner only for a viewer
    who may see the page (a login form reveals nothing of the line)."""
    app = web_app(request)
    shown = authorised(request)
    body = render(
        template,
        app=app,
        path=request.url.path,
        daemon=daemon_state(app, lines_of(request), kept(request)) if shown else None,
        session=bool(request.scope.get("state", {}).get("session", False)),
        person=person_of(request),
        **context,
    )
    return HTMLResponse(body, code, headers)


def error(request: Request, status: int, message: str) -> Response:
    """The error page for a browser, the sentence alone for anything else."""
    if "text/html" in request.headers.get("accept", ""):
        return page(request, "error.html", status, status=status, message=message)
    return text(status, message)


async def read_form(request: Request) -> dict[str, str]:
    """A urlencoded body as a dict (the last value of a repeated key wins), at most
    ``MAX_FORM_BYTES``: nothing here posts more than a token and a path."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise TooLarge(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB; send less.")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise TooLarge(f"the form is larger than {MAX_FORM_BYTES // 1024} KiB; send less.")
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
