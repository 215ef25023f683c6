"""Published profile versions and the lines they are assigned to, in the database.

The workstation publishes a version (``publish``), a person assigns it to a line
(``assign``) or rolls a line back to the version it ran before (``rollback_line``); the
line's daemon reads its assignments (``assigned``) and fetches the version it is told to
run (``published_version`` and ``file_content``). Who did each is recorded as given: the
caller settles the name by the one rule for who signs (``store.signers``).

Files are read one at a time (``file_content``), so a line pulling a version with large
exported graphs holds one of them in memory, not the whole version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, func, insert, select
from sqlalchemy.exc import IntegrityError

from padformer_edge.errors import UserError
from padformer_edge.store.published_tables import (
    profile_assignments,
    published_files,
    published_profiles,
)
from padformer_edge.store.tables import utc_now

PP, PF, PA = published_profiles.c, published_files.c, profile_assignments.c
ASSIGN, ROLLBACK = "assign", "rollback"


@dataclass(frozen=True)
class PublishedVersion:
    """One published version: what identifies it and what it scores with."""

    id: int
    name: str
    version: int
    published_at: datetime
    published_by: str
    metric: str
    runtime: str
    model_sha256: str
    comparator_sha256: str | None
    threshold: float


@dataclass(frozen=True)
class Assignment:
    """A line's decision to run ``version`` of ``profile``, by whom and when."""

    id: int
    line: str
    profile: str
    version: int
    action: str
    assigned_at: datetime
    assigned_by: str


@dataclass(frozen=True)
class PublishedFile:
    """A file of a version: its path in the profile folder, sha256 and size as recorded
    when it was published, and the size of the bytes the database holds now (measured by
    the database, so a line compares the two before it downloads anything)."""

    path: str
    sha256: str
    size_bytes: int
    stored_bytes: int


def _version(row: object) -> PublishedVersion:
    return PublishedVersion(**row._mapping)  # type: ignore[attr-defined]


def _assignment(row: object) -> Assignment:
    return Assignment(**row._mapping)  # type: ignore[attr-defined]


def published_version(conn: Connection, name: str, version: int) -> PublishedVersion | None:
    row = conn.execute(
        select(published_profiles).where(PP.name == name, PP.version == version)
    ).first()
    return None if row is None else _version(row)


def published_versions(conn: Connection, name: str | None = None) -> list[PublishedVersion]:
    """Every published version (of ``name`` only, when given), by name then version."""
    query = select(published_profiles).order_by(PP.name, PP.version)
    if name is not None:
        query = query.where(PP.name == name)
    return [_version(row) for row in conn.execute(query)]


def version_files(conn: Connection, published_id: int) -> list[PublishedFile]:
    """The files of a published version (without their bytes), by path."""
    rows = conn.execute(
        select(PF.path, PF.sha256, PF.size_bytes, func.length(PF.content))
        .where(PF.published_id == published_id)
        .order_by(PF.path)
    )
    return [PublishedFile(*row) for row in rows]


def file_content(conn: Connection, published_id: int, path: str) -> bytes:
    """The bytes of one file of a published version."""
    content = conn.execute(
        select(PF.content).where(PF.published_id == published_id, PF.path == path)
    ).scalar_one()
    return bytes(content)


def publish(
    engine: Engine,
    identity: Mapping[str, object],
    files: Mapping[str, tuple[str, bytes]],
    by: str,
) -> tuple[PublishedVersion, bool]:
    """Store a version (``identity``: name, version, metric, runtime, model_sha256,
    comparator_sha256, threshold) with ``files`` (path -> (sha256, bytes)) published by
    ``by``; returns it and whether it is new. The same files published again change
    nothing; other files under a published version number are refused, since a version
    number must name one set of files on every line.

    Two publishes of one new version at the same moment both find it missing and both
    insert; the database's unique key on (name, version) lets one commit and fails the
    other, which then looks again and answers as a publish that came second does."""
    try:
        return _publish_once(engine, identity, files, by)
    except IntegrityError:
        return _publish_once(engine, identity, files, by)


def _publish_once(
    engine: Engine,
    identity: Mapping[str, object],
    files: Mapping[str, tuple[str, bytes]],
    by: str,
) -> tuple[PublishedVersion, bool]:
    name, version = str(identity["name"]), int(identity["version"])  # type: ignore[call-overload]
    wanted = {path: sha for path, (sha, _) in files.items()}
    with engine.begin() as conn:
        existing = published_version(conn, name, version)
        if existing is not None:
            stored = {f.path: f.sha256 for f in version_files(conn, existing.id)}
            if stored == wanted:
                return existing, False
            raise UserError(
                f"version {version} of profile '{name}' was published on "
                f"{existing.published_at:%Y-%m-%d %H:%M} UTC by {existing.published_by} with "
                "other files; a version number names one set of files, so make a new version "
                f"of the profile (calibrate, refresh or rollback raise it) and publish that."
            )
        published_id = conn.execute(
            insert(published_profiles).values(**identity, published_at=utc_now(), published_by=by)
        ).inserted_primary_key[0]
        for path, (sha, content) in sorted(files.items()):
            conn.execute(
                insert(published_files).values(
                    published_id=published_id, path=path, sha256=sha,
                    size_bytes=len(content), content=content,
                )
            )  # fmt: skip
        stored_version = published_version(conn, name, version)
    assert stored_version is not None
    return stored_version, True


def history(conn: Connection, line: str, profile: str) -> list[Assignment]:
    """Every assignment of ``profile`` on ``line``, oldest first."""
    rows = conn.execute(
        select(profile_assignments).where(PA.line == line, PA.profile == profile).order_by(PA.id)
    )
    return [_assignment(row) for row in rows]


def assigned(conn: Connection, line: str | None = None) -> list[Assignment]:
    """The current assignment (the newest row) of each (line, profile), of ``line`` only
    when given, by line and profile."""
    newest = select(func.max(PA.id)).group_by(PA.line, PA.profile)
    if line is not None:
        newest = newest.where(PA.line == line)
    rows = conn.execute(
        select(profile_assignments).where(PA.id.in_(newest)).order_by(PA.line, PA.profile)
    )
    return [_assignment(row) for row in rows]


def _record(conn: Connection, line: str, profile: str, version: int, action: str,
            by: str) -> Assignment:  # fmt: skip
    new_id = conn.execute(
        insert(profile_assignments).values(
            line=line,
            profile=profile,
            version=version,
            action=action,
            assigned_at=utc_now(),
            assigned_by=by,
        )
    ).inserted_primary_key[0]
    row = conn.execute(select(profile_assignments).where(PA.id == new_id)).one()
    return _assignment(row)


def _known_versions(conn: Connection, name: str) -> list[int]:
    return [v.version for v in published_versions(conn, name)]


def assign(
    engine: Engine, line: str, profile: str, version: int | None, by: str
) -> tuple[Assignment, bool]:
    """Record that ``line`` runs ``version`` of ``profile`` (default: its newest published
    version); returns the assignment and whether it is new (a line already running that
    version gets no second row)."""
    with engine.begin() as conn:
        versions = _known_versions(conn, profile)
        if not versions:
            raise UserError(
                f"profile '{profile}' has no published version in this database; publish "
                f"it first with `padformer-edge profile publish {profile} --yes ENGINEER`."
            )
        version = versions[-1] if version is None else version
        if version not in versions:
            raise UserError(
                f"profile '{profile}' has no published version {version} (published: "
                f"{', '.join(map(str, versions))}); pick one of those."
            )
        current = history(conn, line, profile)
        if current and current[-1].version == version:
            return current[-1], False
        return _record(conn, line, profile, version, ASSIGN, by), True


def rollback_line(engine: Engine, line: str, profile: str, by: str) -> Assignment:
    """Assign ``line`` the version of ``profile`` it ran before its current one (the
    newest earlier assignment of another version), recorded as a rollback."""
    with engine.begin() as conn:
        past = history(conn, line, profile)
        if not past:
            raise UserError(
                f"line '{line}' was never assigned profile '{profile}'; assign a version "
                f"with `padformer-edge profile assign {profile} --line {line} --yes ENGINEER`."
            )
        current = past[-1].version
        earlier = [a for a in reversed(past[:-1]) if a.version != current]
        if not earlier:
            raise UserError(
                f"line '{line}' ran no other version of profile '{profile}' before version "
                f"{current}; there is nothing to roll back to."
            )
        return _record(conn, line, profile, earlier[0].version, ROLLBACK, by)


def lines_running(conn: Connection, profile: str) -> list[str]:
    """The lines with a current assignment of ``profile``, sorted."""
    return sorted({a.line for a in assigned(conn) if a.profile == profile})
