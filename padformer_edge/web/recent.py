"""A read every page makes, made at most once per ``ttl_s`` and shared by every request.

Each store page shows, besides its own rows, things no viewer changes: the line, camera
and profile lists of the history filters, and the daemons' heartbeats and backlog in the
banner. Read per page, they were five of a history page's six connections to the
database (each a ping, a ``BEGIN``, the query and a ``ROLLBACK``), the larger part of what
the page cost on PostgreSQL. Here they are read once per ``ttl_s`` (the page cache's
second, ``page_cache``: the same lag a page already has), the first request after that
reading them again while the others keep the value in hand instead of queueing behind
the read. A failed read is not kept: its error reaches the request that made it, and the
next one tries again. ``ttl_s <= 0`` reads every time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Recent(Generic[T]):
    """``read()``'s value, at most ``ttl_s`` old; thread-safe."""

    def __init__(
        self, read: Callable[[], T], ttl_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._read = read
        self.ttl_s = ttl_s
        self._clock = clock
        self._value: T | None = None
        self._read_at: float | None = None
        self._reading = threading.Lock()

    def get(self) -> T:
        """The kept value while fresh; else read again by this caller, unless another is
        already reading and a value is kept, which is then answered at once."""
        if self.ttl_s <= 0:
            return self._read()
        if self._fresh():
            return self._value  # type: ignore[return-value]
        kept = self._read_at is not None
        if not self._reading.acquire(blocking=not kept):
            return self._value  # type: ignore[return-value]
        try:
            if not self._fresh():  # another caller may have just read it
                started = self._clock()
                self._value = self._read()
                self._read_at = started
            return self._value  # type: ignore[return-value]
        finally:
            self._reading.release()

    def _fresh(self) -> bool:
        read_at = self._read_at
        return read_at is not None and self._clock() - read_at < self.ttl_s

    def forget(self) -> None:
        """Read again on the next ``get`` (this server just changed what it shows)."""
        self._read_at = None
