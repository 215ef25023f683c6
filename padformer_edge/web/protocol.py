"""uvicorn's HTTP/1.1 protocol with a deadline for a connection's first request.

uvicorn times out an idle keep-alive connection after a response, but not one that
connects and never finishes a request head: such half-open connections would stay open
for good, each holding a file descriptor. Here a connection that has not sent one
complete request head ``HEAD_TIMEOUT_S`` after connecting is closed. The class is handed
to uvicorn through its documented ``http=`` setting.

The parser is httptools (llhttp, in C) when it is installed, as it is with the base
install: under a hundred clients at once the pure-Python h11 parser was a third of the
server's CPU per page (``benchmarks/web_load.py``). h11 remains the fallback, so a
platform without an httptools wheel still serves the page, only slower.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0


class _HeadDeadline:
    """Closes a connection whose first request head is not complete in time; mixed into
    one of uvicorn's protocols (both keep the request in progress in ``cycle``)."""

    loop: asyncio.AbstractEventLoop
    transport: asyncio.Transport
    cycle: Any
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)  # type: ignore[misc]
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        super().connection_lost(exc)  # type: ignore[misc]

    def _head_too_slow(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()


class H11HeadDeadline(_HeadDeadline, H11Protocol):
    """The pure-Python parser with the deadline."""


def head_deadline_protocol() -> type[asyncio.Protocol]:
    """The fastest protocol installed, with the deadline: httptools, else h11."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # no httptools wheel for this platform
        return H11HeadDeadline

    class HttpToolsHeadDeadline(_HeadDeadline, HttpToolsProtocol):
        """The C parser with the deadline."""

    return HttpToolsHeadDeadline
