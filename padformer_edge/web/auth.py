"""Who may see the page: the Host a browser asked for, and the token when one is set.

With a token every request must carry it, as ``Authorization: Bearer TOKEN`` (scripts,
Prometheus) or as the cookie the login form sets (browsers; ``HttpOnly`` and
``SameSite=Strict``, so another site can neither read it nor send it along). On a
loopback bind the ``Host`` header must name this machine too, which defeats DNS
rebinding: a web page elsewhere cannot make the browser treat this server as its own.
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from urllib.parse import urlsplit

from padformer_edge.web.config import is_loopback
from padformer_edge.web.http import Request

COOKIE = "padformer_token"


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison, so response timing does not leak a prefix."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def presented_token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return request.cookie(COOKIE)


def host_is_local(request: Request) -> bool:
    """True when the ``Host`` header names a loopback address or ``localhost``."""
    host = urlsplit("//" + request.headers.get("host", "")).hostname
    return host is not None and is_loopback(host)


def same_origin(request: Request) -> bool:
    """A browser POST must come from this site's own page (``Origin`` equal to ``Host``)."""
    origin = request.headers.get("origin")
    if origin is None:
        return "authorization" in request.headers  # a script with a bearer token
    parts = urlsplit(origin)
    return parts.netloc == request.headers.get("host") and parts.scheme in ("http", "https")


def login_cookie(token: str) -> str:
    jar: SimpleCookie = SimpleCookie()
    jar[COOKIE] = token
    jar[COOKIE]["httponly"] = True
    jar[COOKIE]["samesite"] = "Strict"
    jar[COOKIE]["path"] = "/"
    return jar[COOKIE].OutputString()


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this site only, never another host."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target
