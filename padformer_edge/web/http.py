"""The few HTTP types the pages need: a parsed request and a response to send.

The server is the standard library's ``ThreadingHTTPServer``; these two classes keep the
pages independent of it, so each handler is a function from ``Request`` to ``Response``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from typing import Any
from urllib.parse import parse_qsl

HTML = "text/html; charset=utf-8"
TEXT = "text/plain; charset=utf-8"
JSON = "application/json"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes = b""

    def cookie(self, name: str) -> str | None:
        jar = SimpleCookie()
        try:
            jar.load(self.headers.get("cookie", ""))
        except CookieError:
            return None
        morsel = jar.get(name)
        return morsel.value if morsel is not None else None

    def form(self) -> dict[str, str]:
        """A urlencoded POST body as a dict (the last value of a repeated key wins)."""
        return dict(parse_qsl(self.body.decode("utf-8", "replace"), keep_blank_values=True))


@dataclass
class Response:
    status: int = 200
    body: bytes | Iterator[bytes] = b""
    content_type: str = HTML
    headers: list[tuple[str, str]] = field(default_factory=list)

    @property
    def streaming(self) -> bool:
        return not isinstance(self.body, bytes)


def text_response(status: int, message: str) -> Response:
    return Response(status, (message.rstrip("\n") + "\n").encode(), TEXT)


def json_response(payload: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(payload).encode(), JSON)


def redirect(location: str, status: int = 303) -> Response:
    return Response(status, b"", TEXT, [("Location", location)])
