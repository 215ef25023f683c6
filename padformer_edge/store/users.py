"""Named users: who may review on the page and who may apply a recalibration.

Users live in the history database, beside the reviews they sign, so the page, the CLI
and the daemon on one line agree on them with no file to copy. Each has a role
(``Role``: an operator reviews, an engineer reviews and recalibrates) and a personal
token kept only as a hash (``tokens``). While no user exists everything works as before
users existed (free-typed reviewer names, the shared token for the page): adding the
first user is what turns accountability on.

Names are lower-case, so ``Ann`` and ``ann`` cannot become two people; the CLI and the
login form accept either spelling.

On a plant database a user may be limited to some lines (``user_lines``): the page
then shows and lets them review only those lines' rows. A user with no lines recorded
sees every line, which is what every user did before lines could be given, so an
upgraded database changes nobody's view.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, exists, insert, select, update

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_name
from padformer_edge.store.tables import user_lines, users, utc_now
from padformer_edge.store.tokens import decoy, hash_token, new_token, token_matches
from padformer_edge.store.vocabulary import Role

NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
LIST_FIX = "'padformer-edge users list' shows them"


@dataclass(frozen=True)
class User:
    """One user as stored; ``token_hash`` also tells the page whether a session was
    opened with the current token (a reset ends the old ones)."""

    name: str
    role: Role
    token_hash: str
    created_at: datetime
    token_set_at: datetime
    lines: frozenset[str] = field(default_factory=frozenset)  # empty: every line

    @property
    def limited(self) -> bool:
        """True when the user sees only ``lines``, not the whole plant."""
        return bool(self.lines)


def user_name(raw: str) -> str:
    """``raw`` as a stored name (lower-case), or one sentence saying what a name may be."""
    name = raw.strip().lower()
    if NAME.fullmatch(name) is None:
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise UserError(
            f"'{shown}' is not a user name; use 1 to 64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit."
        )
    return name


def _user(row: object, lines: Iterable[str] = ()) -> User:
    _, name, role, token_hash, created_at, token_set_at = row  # type: ignore[misc]
    return User(name, Role(role), token_hash, created_at, token_set_at, frozenset(lines))


_COLUMNS = (users.c.id, users.c.name, users.c.role, users.c.token_hash, users.c.created_at,
            users.c.token_set_at)  # fmt: skip


def _lines_by_user(conn: Connection, user_id: int | None = None) -> dict[int, set[str]]:
    """The lines each limited user is given, by user id (of ``user_id`` only when given)."""
    query = select(user_lines.c.user_id, user_lines.c.line)
    if user_id is not None:
        query = query.where(user_lines.c.user_id == user_id)
    found: dict[int, set[str]] = {}
    for uid, line in conn.execute(query):
        found.setdefault(int(uid), set()).add(str(line))
    return found


def line_names(raw: Iterable[str]) -> frozenset[str]:
    """Each of ``raw`` checked as a line name (``store.lines.line_name``)."""
    return frozenset(line_name(line) for line in raw)


def any_users(conn: Connection) -> bool:
    """True once a user exists: reviews must then be signed by one."""
    return bool(conn.execute(select(exists().select_from(users))).scalar())


def list_users(engine: Engine) -> list[User]:
    """Every user, by name."""
    with reading(engine) as conn:
        rows = conn.execute(select(*_COLUMNS).order_by(users.c.name)).all()
        lines = _lines_by_user(conn)
    return [_user(r, lines.get(r[0], ())) for r in rows]


def find_user(conn: Connection, name: str) -> User | None:
    """The user called ``name`` (any case), or ``None``."""
    try:
        wanted = user_name(name)
    except UserError:
        return None
    row = conn.execute(select(*_COLUMNS).where(users.c.name == wanted)).first()
    if row is None:
        return None
    return _user(row, _lines_by_user(conn, row[0]).get(row[0], ()))


def _set_lines(conn: Connection, name: str, lines: frozenset[str]) -> None:
    user_id = conn.execute(select(users.c.id).where(users.c.name == name)).scalar_one()
    conn.execute(delete(user_lines).where(user_lines.c.user_id == user_id))
    if lines:
        conn.execute(insert(user_lines), [{"user_id": user_id, "line": ln} for ln in lines])


def add_user(engine: Engine, name: str, role: Role, lines: Iterable[str] = ()) -> tuple[User, str]:
    """Add a user, limited to ``lines`` when any are given; returns it and its token,
    which is stored only as a hash and so can be shown only now."""
    name, token = user_name(name), new_token()
    limited = line_names(lines)
    now = utc_now()
    with engine.begin() as conn:
        if find_user(conn, name) is not None:
            raise UserError(
                f"user '{name}' already exists; pick another name, or give them a new "
                f"token with 'padformer-edge users reset-token {name}'."
            )
        conn.execute(insert(users).values(name=name, role=role, token_hash=hash_token(token),
                                          created_at=now, token_set_at=now))  # fmt: skip
        _set_lines(conn, name, limited)
        added = find_user(conn, name)
    assert added is not None
    return added, token


def _require(conn: Connection, name: str) -> User:
    found = find_user(conn, name)
    if found is None:
        raise UserError(f"there is no user '{name.strip()}'; {LIST_FIX}.")
    return found


def reset_token(engine: Engine, name: str) -> tuple[User, str]:
    """Give ``name`` a new token (the old one stops working, and so do the page sessions
    opened with it); returns the user and the token, shown only now."""
    token = new_token()
    with engine.begin() as conn:
        user = _require(conn, name)
        conn.execute(update(users).where(users.c.name == user.name)
                     .values(token_hash=hash_token(token), token_set_at=utc_now()))  # fmt: skip
        changed = find_user(conn, user.name)
    assert changed is not None
    return changed, token


def set_lines(engine: Engine, name: str, lines: Iterable[str]) -> User:
    """Limit ``name`` to ``lines`` (replacing what they had); no lines: every line."""
    limited = line_names(lines)
    with engine.begin() as conn:
        user = _require(conn, name)
        _set_lines(conn, user.name, limited)
        changed = find_user(conn, user.name)
    assert changed is not None
    return changed


def remove_user(engine: Engine, name: str) -> User:
    """Remove ``name`` (and the lines they were limited to); the reviews they signed
    keep their name."""
    with engine.begin() as conn:
        user = _require(conn, name)
        user_id = conn.execute(select(users.c.id).where(users.c.name == user.name)).scalar_one()
        conn.execute(delete(user_lines).where(user_lines.c.user_id == user_id))
        conn.execute(delete(users).where(users.c.name == user.name))
    return user


def authenticate(conn: Connection, name: str, token: str) -> User | None:
    """The user whose name and token these are, or ``None``; an unknown name costs the
    same scrypt as a wrong token."""
    user = find_user(conn, name)
    matches = token_matches(token, user.token_hash if user is not None else decoy())
    return user if user is not None and matches else None


def reviewer_of(conn: Connection, name: str) -> str:
    """The name a review is signed with: as given while no user exists, else the stored
    name of an existing user (both roles review)."""
    if not any_users(conn):
        return name
    user = find_user(conn, name)
    if user is None:
        raise UserError(
            f"reviewer '{name}' is not a user of this database; reviews are signed by "
            f"named users once any exists ({LIST_FIX})."
        )
    return user.name
