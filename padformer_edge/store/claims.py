"""What a running daemon holds: its line and its camera folders, one daemon each.

Two daemons on one line would both claim the line's queue and alert twice; two on one
camera folder would inspect every image twice under two lines. So a daemon claims its
line and each folder it watches in the database it writes, before it takes any work,
and refuses to start when a live daemon (on this PC or another sharing the database)
holds one of them.

A folder is named by the host it is on and its resolved path: ``/srv/camera`` on two
line PCs is two folders. A claim is live while its holder renews it: younger than its
``ttl_s``, so a PC that lost power lets go by itself after that long. On the holder's
own host the process is asked too: a daemon killed a moment ago (``Restart=`` under
systemd starts the next at once) has no process any more, so its claim is dead without
the wait. Taking claims is one write transaction, under PostgreSQL's transaction-level
advisory lock or SQLite's write lock, so two daemons starting together cannot both see
the line free.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Connection, Engine, delete, insert, select, text, update

from padformer_edge.errors import UserError
from padformer_edge.store.tables import daemon_claims, utc_now

DC = daemon_claims.c
ADVISORY_LOCK_KEY = 0x70616466  # any fixed number; "padf", so it reads as this program's


def line_resource(line: str) -> str:
    return f"line {line}"


def folder_resource(host: str, path: str) -> str:
    return f"folder {host}:{path}"


@dataclass(frozen=True)
class Claimant:
    """The process asking: where it runs, which process it is, since when."""

    line: str
    host: str
    pid: int
    started_at: datetime

    def resources(self, folders: Sequence[str]) -> list[str]:
        """Its line and each of ``folders`` (resolved paths on its own host)."""
        return [line_resource(self.line)] + [folder_resource(self.host, f) for f in folders]


class ClaimRefused(UserError):
    """A live daemon holds what was asked for; the message is ``Claim.refusal``'s."""

    def __init__(self, claim: Claim) -> None:
        super().__init__(claim.refusal())
        self.claim = claim


@dataclass(frozen=True)
class Claim:
    """A claim as stored."""

    resource: str
    line: str
    host: str
    pid: int
    started_at: datetime
    renewed_at: datetime
    ttl_s: float

    def live(self, now: datetime, host: str) -> bool:
        """Held: renewed within its ``ttl_s`` and, on ``host`` itself, its process exists."""
        if now - self.renewed_at > timedelta(seconds=self.ttl_s):
            return False
        return self.host != host or process_exists(self.pid)

    def held_by(self, claimant: Claimant) -> bool:
        return self.host == claimant.host and self.pid == claimant.pid

    def refusal(self) -> str:
        """The one sentence a refused daemon says: what is held, by whom, since when."""
        kind, _, name = self.resource.partition(" ")
        what = f"line '{name}'" if kind == "line" else f"camera folder {name}"
        since = self.started_at.isoformat(timespec="seconds")
        return (
            f"{what} is held by the daemon of line '{self.line}' on host {self.host} "
            f"(PID {self.pid}, since {since}); stop that daemon first, or give this one "
            "another line name or folder (a dead holder's claim expires by itself)."
        )


def process_exists(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (signal 0 checks, sends nothing)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def _lock(conn: Connection) -> None:
    """Serialise claim-taking: SQLite's ``BEGIN IMMEDIATE`` already holds the write lock,
    PostgreSQL takes a lock for this transaction (rows that do not exist yet cannot be
    locked with ``FOR UPDATE``)."""
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})


def _claims(conn: Connection, resources: Sequence[str]) -> list[Claim]:
    """The stored claims on ``resources``, in their order (the line first)."""
    rows = conn.execute(select(daemon_claims).where(DC.resource.in_(list(resources))))
    found = [Claim(**row._mapping) for row in rows]
    return sorted(found, key=lambda claim: resources.index(claim.resource))


def acquire(
    engine: Engine,
    claimant: Claimant,
    folders: Sequence[str],
    ttl_s: float,
    now: datetime | None = None,
) -> None:
    """Claim ``claimant``'s line and ``folders``, or raise ``ClaimRefused`` naming the live
    holder of the first one held; nothing changes then.

    Claims this line held before and no longer wants (a folder taken out of the config)
    are dropped: whoever held them was this line's daemon, found dead by the line claim.
    """
    at = now or utc_now()
    resources = claimant.resources(folders)
    with engine.begin() as conn:
        _lock(conn)
        for claim in _claims(conn, resources):
            if claim.live(at, claimant.host) and not claim.held_by(claimant):
                raise ClaimRefused(claim)
        conn.execute(
            delete(daemon_claims).where((DC.line == claimant.line) | DC.resource.in_(resources))
        )
        conn.execute(
            insert(daemon_claims),
            [
                dict(resource=r, line=claimant.line, host=claimant.host, pid=claimant.pid,
                     started_at=claimant.started_at, renewed_at=at, ttl_s=ttl_s)
                for r in resources
            ],
        )  # fmt: skip


def renew(
    engine: Engine, claimant: Claimant, folders: Sequence[str], now: datetime | None = None
) -> int:
    """Move the renewal time of ``claimant``'s claims to now; returns how many it still
    holds (fewer than its resources means another daemon took one after it expired).

    Under the same lock as ``acquire``: a renewal racing a newcomer that found the claim
    expired either lands first (the newcomer then sees it fresh and refuses) or finds the
    rows taken, never both daemons believing they hold the line."""
    resources = claimant.resources(folders)
    with engine.begin() as conn:
        _lock(conn)
        result = conn.execute(
            update(daemon_claims)
            .where(
                DC.resource.in_(resources),
                DC.host == claimant.host,
                DC.pid == claimant.pid,
            )
            .values(renewed_at=now or utc_now())
        )
    return int(result.rowcount or 0)


def release(engine: Engine, claimant: Claimant) -> int:
    """Drop every claim ``claimant`` holds (a clean stop): the next daemon need not wait."""
    with engine.begin() as conn:
        result = conn.execute(
            delete(daemon_claims).where(
                DC.line == claimant.line, DC.host == claimant.host, DC.pid == claimant.pid
            )
        )
    return int(result.rowcount or 0)


def list_claims(engine: Engine) -> list[Claim]:
    """Every stored claim, live or not, by resource."""
    with engine.connect() as conn:
        rows = conn.execute(select(daemon_claims).order_by(DC.resource))
        return [Claim(**row._mapping) for row in rows]
