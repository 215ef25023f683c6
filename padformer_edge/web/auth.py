"""Who may see the page: the Host a browser asked for, the token, and where to go next.

With a token every request must carry it as ``Authorization: Bearer TOKEN`` (scripts,
Prometheus) or come from a browser that logged in (``sessions``: a signed random id in
an ``HttpOnly``, ``SameSite=Strict`` cookie, never the token). On a loopback bind the
``Host`` header must name this machine too, which defeats DNS rebinding: a web page
elsewhere cannot make the browser treat this server as its own.
"""

from __future__ import annotations

import hmac
from urllib.parse import urlsplit

from starlette.requests import HTTPConnection

from padformer_edge.web.config import is_loopback


def token_matches(given: str | None, token: str) -> bool:
    """Constant-time comparison, so response timing does not leak a prefix."""
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


def bearer_token(request: HTTPConnection) -> str | None:
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip()
    return None


def host_is_local(request: HTTPConnection) -> bool:
    """True when the ``Host`` header names a loopback address or ``localhost``."""
    try:
        host = urlsplit("//" + request.headers.get("host", "")).hostname
    except ValueError:  # a malformed bracketed address
        return False
    return host is not None and is_loopback(host)


def client_of(conn: HTTPConnection) -> str:
    """The client's address: the peer, or what a trusted proxy says it saw (``proxies``
    has already rewritten the scope)."""
    return conn.client.host if conn.client is not None else "unknown"


def public_host(conn: HTTPConnection) -> str | None:
    """The host the browser asked for: a trusted proxy's ``X-Forwarded-Host``, else ``Host``."""
    forwarded = conn.scope.get("state", {}).get("forwarded_host")
    return forwarded or conn.headers.get("host")


def is_https(conn: HTTPConnection) -> bool:
    """True under TLS here, or behind a trusted proxy whose ``X-Forwarded-Proto`` says https."""
    return conn.scope.get("scheme") == "https"


def cross_site(request: HTTPConnection) -> bool:
    """True when the request carries an ``Origin`` that is not this site's: another site's
    form. A request without one (a script, or a browser that sends none) is not."""
    return "origin" in request.headers and not same_origin(request)


def same_origin(request: HTTPConnection) -> bool:
    """A browser POST must come from this site's own page (``Origin`` naming the host the
    browser asked for)."""
    origin = request.headers.get("origin")
    if origin is None:
        return "authorization" in request.headers  # a script with a bearer token
    parts = urlsplit(origin)
    return parts.netloc == public_host(request) and parts.scheme in ("http", "https")


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path on this site, else ``/``.

    Refused: anything with a scheme or host (``https://x``, ``//x``), a backslash (some
    browsers read ``/\\x`` as ``//x``), and any control character or space (a tab or
    line break is dropped by browsers, turning ``/<TAB>/x`` into ``//x``, and CR/LF in
    a header would start a new one).
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return "/"
    if "\\" in target or any(ord(ch) < 0x21 or ord(ch) == 0x7F for ch in target):
        return "/"
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return "/"
    return target
