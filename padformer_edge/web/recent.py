"""A read every page makes, made at most once per ``ttl_s`` and shared by every request.

Each store page shows, besides its own rows, things no viewer changes: the line, camera
and profile lists of the history filters, and the daemons' heartbeats and backlog in the
banner. Read per page, they were five of a history page's six connections to the
database (each a ping, a ``BEGIN``, the query and a ``ROLLBACK``), the larger part of what
the page cost on PostgreSQL. Here they are read once per ``ttl_s`` (the page cache's
second, ``page_cache``: the same lag a page already has), the first request after that
reading them again while the others keep the value in hand instead of queueing behind
the read. A failed read is not kept: its error reaches the request that made it, and the
next one tries again. ``ttl_s <= 0`` reads every time. The page's list of users
(``people.People``) is kept the same way.
"""

from __future__ import annotations

import math
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
        self._kept = False  # a value is in hand (``_value`` may be a falsy one)
        self._read_at = -math.inf
        self._reading = threading.Lock()  # held by the caller reading anew
        self._forgotten = 0  # counts ``forget``: one during a read makes that read stale

    @property
    def kept(self) -> T | None:
        """The value in hand, however old; ``None`` before the first read and after
        ``forget`` (for a ``read`` that falls back on what was last seen)."""
        return self._value

    def stale(self) -> bool:
        """True when the next ``get`` reads (a caller on an event loop then calls it in a
        thread); False while the value is fresh, or while another caller reads it anew
        and ``get`` would answer at once with the value in hand."""
        return not self._fresh() and not (self._kept and self._reading.locked())

    def get(self) -> T:
        """The kept value while fresh; else read again by this caller, unless another is
        already reading and a value is kept, which is then answered at once."""
        if self.ttl_s <= 0:
            return self._read()
        if self._fresh():
            return self._value  # type: ignore[return-value]
        if not self._reading.acquire(blocking=not self._kept):
            return self._value  # type: ignore[return-value]
        try:
            if not self._fresh():  # another caller may have just read it
                started, forgotten = self._clock(), self._forgotten
                self._value, self._kept = self._read(), True
                # forgotten while read (the store changed under the read): read it again
                self._read_at = started if forgotten == self._forgotten else -math.inf
            return self._value  # type: ignore[return-value]
        finally:
            self._reading.release()

    def _fresh(self) -> bool:
        return self._kept and self._clock() - self._read_at < self.ttl_s

    def forget(self) -> None:
        """Read again on the next ``get``, which waits for that read rather than answer
        with the value in hand (this server just changed what it shows)."""
        self._forgotten += 1
        self._value, self._kept, self._read_at = None, False, -math.inf
