"""Logged-in browsers: a random session id per login, signed into the cookie, revocable.

The cookie used to be the token itself, so anything that saw the cookie (a proxy log, a
shared profile) held the token for good and there was no way to log out. Now a login
draws 32 random bytes, keeps them server-side and gives the browser only the id signed
with a per-process key (itsdangerous, with a timestamp for the maximum age). A forged or
altered cookie fails the signature; a signed id that was logged out, evicted or issued
by an earlier process is simply not in the book. Restarting the page logs everyone out,
which costs an operator one login and is the safe direction. A session opened by a
named user's login remembers who (``people.Person``); one opened with the shared token
remembers no one.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from itsdangerous import BadSignature, URLSafeTimedSerializer

from padformer_edge.web.people import Person

COOKIE = "padformer_session"
MAX_AGE_S = 12 * 3600  # one shift and then some
MAX_SESSIONS = 1000  # the oldest login is dropped beyond this; bounds the book's memory
SALT = "padformer-edge.session"


@dataclass(frozen=True)
class Opened:
    """An open session: who logged in (``None``: with the shared token)."""

    person: Person | None


class Sessions:
    """The book of open sessions; thread-safe, one per web app."""

    def __init__(
        self,
        secret: bytes | None = None,
        *,
        max_age_s: float = MAX_AGE_S,
        max_sessions: int = MAX_SESSIONS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._serializer = URLSafeTimedSerializer(secret or secrets.token_bytes(32), salt=SALT)
        self.max_age_s = max_age_s
        self.max_sessions = max_sessions
        self._clock = clock
        # id -> (expiry on ``clock``, who logged in)
        self._open: OrderedDict[str, tuple[float, Opened]] = OrderedDict()
        self._lock = threading.Lock()

    def open(self, person: Person | None = None) -> str:
        """Start a session for ``person`` (``None``: a shared-token login); returns the
        cookie value (the signed id, never the token)."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            self._open[session_id] = (self._clock() + self.max_age_s, Opened(person))
            while len(self._open) > self.max_sessions:
                self._open.popitem(last=False)
        return self._serializer.dumps(session_id)

    def _id(self, cookie: str | None) -> str | None:
        if not cookie:
            return None
        try:
            session_id = self._serializer.loads(cookie, max_age=self.max_age_s)
        except BadSignature:  # includes SignatureExpired
            return None
        return session_id if isinstance(session_id, str) else None

    def holder(self, cookie: str | None) -> Opened | None:
        """The session of a correctly signed, unexpired id still open, else ``None``."""
        session_id = self._id(cookie)
        if session_id is None:
            return None
        with self._lock:
            found = self._open.get(session_id)
            if found is None:
                return None
            expiry, opened = found
            if self._clock() >= expiry:
                del self._open[session_id]
                return None
            return opened

    def valid(self, cookie: str | None) -> bool:
        """True for a correctly signed, unexpired id of a session still open."""
        return self.holder(cookie) is not None

    def close(self, cookie: str | None) -> bool:
        """Log a session out; True if it was open."""
        session_id = self._id(cookie)
        if session_id is None:
            return False
        with self._lock:
            return self._open.pop(session_id, None) is not None
