"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for a connection's first request.

uvicorn times out an idle keep-alive connection after a response, but not one that
connects and never finishes a request head: such half-open connections would stay open
for good, each holding a file descriptor. Here a connection that has not sent one
complete request head ``HEAD_TIMEOUT_S`` after connecting is closed. The class is handed
to uvicorn through its documented ``http=`` setting.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol

HEAD_TIMEOUT_S = 10.0


class HeadDeadline(H11Protocol):
    """Closes a connection whose first request head is not complete in time."""

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
        super().connection_lost(exc)

    def _head_too_slow(self) -> None:
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()
