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

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
from padformer_edge.store.users import User, authenticate, list_users
from padformer_edge.store.vocabulary import Role
from padformer_edge.web.recent import Recent

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
        self._users: Recent[dict[str, User]] = Recent(self._read, ttl_s, clock)

    def _read(self) -> dict[str, User]:
        """The users by name now; a database that cannot be read: the last list seen."""
        try:
            return {user.name: user for user in list_users(self._reader())}
        except (UserError, SQLAlchemyError):
            return self._users.kept or {}

    def stale(self) -> bool:
        """True when the next ``current`` reads the database (the gate then calls it in
        the thread pool, keeping the event loop free of database reads)."""
        return self._users.stale()

    def current(self) -> dict[str, User]:
        """The users by name, at most ``ttl_s`` old, or a read older while another
        request reads them anew: a hundred viewers arriving together then do not all
        wait for the one read (only the first ever does, with no list in hand)."""
        return self._users.get()

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
        self._users.forget()

    def authenticate(self, name: str, token: str) -> Person | None:
        """The person these name and token belong to, read from the database now (a
        user added a moment ago can log in at once); ``None`` when they do not match."""
        with reading(self._reader()) as conn:
            user = authenticate(conn, name, token)
        if user is None:
            return None
        self.forget()  # the session is checked against the list: make it include them
        return as_person(user)
