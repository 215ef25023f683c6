"""A raw HTTP client for the tests: sends the path exactly as written (no normalising of
``../``), with any headers, and returns status, headers and body."""

from __future__ import annotations

import http.client
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


def request(
    base: str,
    path: str,
    *,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    body: bytes | None = None,
) -> Reply:
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": parts.netloc, **(headers or {})}
        if body is not None:
            sent.setdefault("Content-Type", "application/x-www-form-urlencoded")
            sent["Content-Length"] = str(len(body))
        for name, value in sent.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        reply = conn.getresponse()
        return Reply(reply.status, {k.lower(): v for k, v in reply.getheaders()}, reply.read())
    finally:
        conn.close()
