"""The named users as the page sees them: who exists, who logged in, whose login still holds.

Users are rows of the history database (``store.users``), changed by the CLI while the
page runs. Every request asks whether any exist (that decides whether the page needs a
named login), so the list is read at most once per ``TTL_S`` and shared by all requests
(while one request reads it again, the others go on with the list in hand);
a user added, removed or given a new token is seen within that time. A login records
the token hash it was checked against (``Person.stamp``): a removed user or a reset
token ends the sessions opened before, on the next request after the list is re-read.
A database that cannot be read keeps the last list seen (no list at all: no users, and
then every page answers 503 anyway; a review is checked against the database itself
when it is saved).

A user limited to lines (``store.users``) carries them in ``Person.lines``. The gate
takes the person from the list re-read every ``TTL_S`` (``refreshed``), not from the
session, so lines given or taken with ``users lines`` reach open sessions within
seconds, as a removal does.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
from padformer_edge.store.users import User, authenticate, list_users
from padformer_edge.store.vocabulary import Role

TTL_S = 2.0


@dataclass(frozen=True)
class Person:
    """A user logged in to the page, as their session remembers them."""

    name: str
    role: Role
    stamp: str  # the token hash the login was checked against
    lines: frozenset[str] = frozenset()  # the lines they are limited to; empty: every line

    @property
    def limited(self) -> bool:
        return bool(self.lines)


def as_person(user: User) -> Person:
    """``user`` as logged in to the page."""
    return Person(user.name, user.role, user.token_hash, user.lines)


class People:
    """The users of one page's database, re-read at most every ``ttl_s``; thread-safe."""

    def __init__(
        self,
        reader: Callable[[], Engine],
        *,
        ttl_s: float = TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._reader = reader
        self.ttl_s = ttl_s
        self._clock = clock
        self._users: dict[str, User] | None = None
        self._read_at = 0.0
        self._reading = threading.Lock()  # held by the request reading the list
        self._forgotten = 0  # counts ``forget``

    def _due(self) -> bool:
        return self._users is None or self._clock() - self._read_at >= self.ttl_s

    def stale(self) -> bool:
        """True when the next ``current`` reads the database (the gate then calls it in
        the thread pool, keeping the event loop free of database reads); False while
        another request reads it, since ``current`` then answers with the list in hand."""
        return self._due() and not (self._users is not None and self._reading.locked())

    def current(self) -> dict[str, User]:
        """The users by name, at most ``ttl_s`` old, or a read older while another
        request reads them anew: a hundred viewers arriving together then do not all
        wait for the one read (only the first ever does, with no list in hand)."""
        if not self._due():
            return self._users  # type: ignore[return-value]
        if not self._reading.acquire(blocking=self._users is None):
            return self._users  # type: ignore[return-value]
        try:
            if self._due():  # another request may have just read them
                now, forgotten = self._clock(), self._forgotten
                try:
                    self._users = {u.name: u for u in list_users(self._reader())}
                except (UserError, SQLAlchemyError):  # not readable now: the last list seen
                    self._users = self._users or {}
                # forgotten while read (a login just checked a new user): read it again
                self._read_at = now if forgotten == self._forgotten else -math.inf
            return self._users  # type: ignore[return-value]
        finally:
            self._reading.release()

    def exist(self) -> bool:
        """True once any user exists: reviews then need a named login."""
        return bool(self.current())

    def refreshed(self, person: Person) -> Person | None:
        """``person`` as the list now has them (role and lines as changed since their
        login); ``None`` once removed or given a new token."""
        user = self.current().get(person.name)
        if user is None or user.token_hash != person.stamp:
            return None
        return as_person(user)

    def forget(self) -> None:
        """Read the list again on the next request."""
        self._forgotten += 1
        self._users = None

    def authenticate(self, name: str, token: str) -> Person | None:
        """The person these name and token belong to, read from the database now (a
        user added a moment ago can log in at once); ``None`` when they do not match."""
        with reading(self._reader()) as conn:
            user = authenticate(conn, name, token)
        if user is None:
            return None
        self.forget()  # the session is checked against the list: make it include them
        return as_person(user)
