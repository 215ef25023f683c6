"""Failed logins counted per client address, with a wait after too many.

Without it a script could try tokens as fast as the server answers (300 in under a
second was measured). Each failure is remembered for ``window_s``; a client with
``max_failures`` failures inside the window is refused, even with the right token,
until the oldest of them ages out. Memory is bounded: addresses with no failure left in
the window are forgotten, and at most ``max_clients`` are tracked.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

MAX_FAILURES = 5
WINDOW_S = 60.0
MAX_CLIENTS = 10_000


class LoginThrottle:
    """Thread-safe failure counts; ``clock`` is injectable so tests need not sleep."""

    def __init__(
        self,
        max_failures: int = MAX_FAILURES,
        window_s: float = WINDOW_S,
        *,
        max_clients: int = MAX_CLIENTS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_failures = max_failures
        self.window_s = window_s
        self.max_clients = max_clients
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float]:
        times = self._failures.get(client, deque())
        while times and now - times[0] >= self.window_s:
            times.popleft()
        if not times:
            self._failures.pop(client, None)
        return times

    def retry_after(self, client: str) -> float:
        """Seconds ``client`` must wait before another try; 0 when it may try now."""
        with self._lock:
            now = self._clock()
            times = self._recent(client, now)
            if len(times) < self.max_failures:
                return 0.0
            return max(self.window_s - (now - times[0]), 0.0)

    def failed(self, client: str) -> int:
        """Count a failed login; returns the client's failures inside the window."""
        with self._lock:
            now = self._clock()
            times = self._recent(client, now)
            times.append(now)
            self._failures[client] = times
            self._failures.move_to_end(client)
            while len(self._failures) > self.max_clients:
                self._failures.popitem(last=False)
            return len(times)
