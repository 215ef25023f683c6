"""Schema versions: upgrade, check, back up, and the daemon's migrate-on-start.

The schema only ever changes through the Alembic revisions in ``migrations/``. Readers
refuse a database that is not at head rather than guess at columns; the daemon upgrades
on start, under a file lock (two daemons started together must not both migrate) and
after an online backup (a migration that goes wrong must not cost the history).

Checking a database is not running a migration: the head is read from the revision
files' own ``revision`` and ``down_revision`` lines and the current revision from
Alembic's version table, both without importing Alembic, whose import was a large part
of ``results list``'s start-up. Alembic is imported only to upgrade or downgrade, and a
test holds the chain and head read here equal to what Alembic computes from the same
files.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import logging
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import describe, open_engine, sqlite_path, state_dir

if TYPE_CHECKING:
    from alembic.config import Config

log = get_logger(__name__)
VERSION_TABLE = "alembic_version"  # Alembic's default name, which env.py keeps
# Alembic narrates every step at INFO; the store logs the outcome as one structured event.
logging.getLogger("alembic").setLevel(logging.WARNING)


def migrations_folder() -> Path:
    """The installed ``padformer_edge_migrations`` package's folder (the repository's
    ``migrations/``), found without importing it.

    The revisions are Alembic's script files, read and run by Alembic; their ``env.py``
    imports this package's models, so importing the migrations package from here would
    tie the two packages into a circle. ``find_spec`` only locates the folder.
    """
    spec = importlib.util.find_spec("padformer_edge_migrations")
    folders = list(spec.submodule_search_locations or []) if spec else []
    if not folders or not (Path(folders[0]) / "env.py").is_file():
        raise UserError(
            "the schema migrations (the padformer_edge_migrations package) are not "
            "installed beside padformer_edge; reinstall padformer-edge."
        )
    return Path(folders[0])


def alembic_config() -> Config:
    """Alembic configured in code, pointing at the installed migrations folder."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_folder()))
    return config


def _revision_ids(path: Path) -> tuple[str, tuple[str, ...]] | None:
    """(revision, its down revisions) as a revision file assigns them at module level,
    read with ``ast`` (no import, no Alembic); None for a file that is not a revision."""
    found: dict[str, object] = {}
    for node in ast.parse(path.read_bytes(), str(path)).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if isinstance(target, ast.Name) and target.id in ("revision", "down_revision"):
            found[target.id] = ast.literal_eval(value)
    revision, down = found.get("revision"), found.get("down_revision")
    if not isinstance(revision, str):
        return None
    downs = (down,) if isinstance(down, str) else tuple(down or ())  # type: ignore[arg-type]
    return revision, downs


def revision_chain() -> dict[str, tuple[str, ...]]:
    """Every revision in ``migrations/versions`` with the revisions it follows."""
    chain = {}
    for path in sorted((migrations_folder() / "versions").glob("*.py")):
        ids = _revision_ids(path)
        if ids is not None:
            chain[ids[0]] = ids[1]
    return chain


@functools.cache
def head_revision() -> str:
    """The one revision no other follows: what a database must be stamped with."""
    chain = revision_chain()
    followed = {down for downs in chain.values() for down in downs}
    heads = sorted(set(chain) - followed)
    if len(heads) != 1:
        raise RuntimeError(f"migrations/versions must have exactly one head, found {heads}")
    return heads[0]


def _first_line(error: BaseException | None) -> str:
    return (str(error).strip().splitlines() or ["unknown error"])[0]


def current_revision(engine: Engine) -> str | None:
    """The revision stamped in the database; ``None`` for an empty one."""
    try:
        with engine.connect() as conn:
            if not inspect(conn).has_table(VERSION_TABLE):
                return None
            stamped = conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    except DBAPIError as err:
        raise UserError(
            f"cannot read the database {describe(engine.url)} ({_first_line(err.orig)}); "
            "check the --db URL and that it names a padformer-edge database."
        ) from err
    if len(stamped) > 1:
        raise UserError(
            f"the database {describe(engine.url)} is stamped with several schema revisions "
            f"({', '.join(sorted(r[0] for r in stamped))}); it was not migrated by "
            "padformer-edge, so restore it from a backup."
        )
    return stamped[0][0] if stamped else None


def _run(engine: Engine, action: str, revision: str) -> None:
    from alembic import command  # only here: checking a database needs no Alembic

    from padformer_edge.store.lines import line_of

    config = alembic_config()
    # Revision 0008 gives the rows stored before it this line (the daemon's, when it
    # migrates on start; ``db upgrade --line``'s; else the host name).
    config.attributes["line"] = line_of(engine)
    with engine.connect() as conn:
        # The driver connection, because any statement through SQLAlchemy would first
        # begin a transaction, and SQLite ignores this pragma inside one. Batch migrations
        # rebuild tables; with foreign keys on, dropping the old inspections table would
        # cascade-delete every alert.
        raw = conn.connection.driver_connection if conn.dialect.name == "sqlite" else None
        if raw is not None:
            raw.execute("PRAGMA foreign_keys = OFF")
        config.attributes["connection"] = conn
        try:
            getattr(command, action)(config, revision)
            broken = raw.execute("PRAGMA foreign_key_check").fetchall() if raw else []
        finally:
            if raw is not None:
                raw.execute("PRAGMA foreign_keys = ON")
        if broken:
            raise RuntimeError(f"migration left dangling foreign keys: {broken[:5]}")


def upgrade(engine: Engine, revision: str = "head") -> None:
    _run(engine, "upgrade", revision)


def downgrade(engine: Engine, revision: str) -> None:
    _run(engine, "downgrade", revision)


def require_head(engine: Engine, db_hint: str = "") -> None:
    """Refuse to read a database whose schema this version does not know."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return
    where = f" --db {db_hint}" if db_hint else ""
    if current is None:
        raise UserError(
            f"the database {describe(engine.url)} has no schema yet; run "
            f"'padformer-edge db upgrade{where}' first."
        )
    if current not in revision_chain():  # written by a newer padformer-edge
        raise UserError(
            f"the database {describe(engine.url)} is at schema {current}, which this version "
            f"(schema {head}) does not know; a newer padformer-edge wrote it, so install that "
            "version or newer to read it."
        )
    raise UserError(
        f"the database {describe(engine.url)} is at schema {current} but this version needs "
        f"{head}; run 'padformer-edge db upgrade{where}' (stop the daemon first)."
    )


def backup(engine: Engine, destination: Path | None = None) -> Path:
    """An online, consistent copy of a SQLite database; the daemon may keep writing.

    SQLite's backup API copies a snapshot under a read lock, which WAL lets run beside
    the writer. The copy is written to a temporary name, synced and renamed, so a
    half-written backup never carries the final name.
    """
    source = sqlite_path(engine.url)
    if source is None:
        raise UserError(
            "'db backup' copies SQLite files only; back up PostgreSQL with "
            "pg_dump or the server's own backups."
        )
    if not source.exists():
        raise UserError(f"there is no database at {source} to back up; check --db.")
    if destination is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        # Next to the database: the same disk, permissions and owner as what it copies.
        destination = source.parent / "backups" / f"{source.stem}-{stamp}.sqlite3"
    with atomic_path(destination, fix="check the backup folder's permissions") as partial:
        src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        dst = sqlite3.connect(partial)
        try:
            src.backup(dst)
            # A single self-contained file: the copy must not depend on a -wal beside it.
            dst.execute("PRAGMA journal_mode = DELETE")
        finally:
            dst.close()
            src.close()
    return destination


def migrate_lock_path(url: URL) -> Path:
    """The file two daemons starting at once lock to migrate one at a time: beside a
    SQLite file, in the state folder for a server. It stays after the lock is released
    (deleting it would let a waiting process lock a file no newcomer sees)."""
    path = sqlite_path(url)
    return path.with_name(path.name + ".migrate.lock") if path else state_dir() / "migrate.lock"


MIGRATE_LOCK_KEY = 0x70616466_6D6967  # PostgreSQL advisory lock key: "padf" "mig"


@contextmanager
def _server_lock(engine: Engine) -> Iterator[None]:
    """On PostgreSQL, a session-level advisory lock held on a connection of its own while
    the revision is read and the upgrade runs: line PCs sharing one plant database start
    their daemons independently, and a file lock only orders the daemons of one PC. The
    second to come waits, then finds the database at head. SQLite needs none: its file
    lock already sits beside the one file every writer opens."""
    if engine.dialect.name != "postgresql":
        yield
        return
    with engine.connect() as holder:
        holder.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATE_LOCK_KEY})
        holder.commit()  # the lock is the session's: no transaction left open meanwhile
        try:
            yield
        finally:
            holder.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATE_LOCK_KEY})
            holder.commit()


def migrate_on_start(engine: Engine, backup_dir: Path | None = None) -> str:
    """What the daemon calls before it takes work: lock (the file lock, and on PostgreSQL
    the server's advisory lock too), back up if behind, upgrade.

    Returns the head revision. The backup is skipped for an empty database (nothing to
    lose) and for PostgreSQL (the server's backups own that).
    """
    from filelock import FileLock  # only the daemon migrates; readers never lock

    path = sqlite_path(engine.url)
    lock_path = migrate_lock_path(engine.url)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(lock_path), _server_lock(engine):
        current, head = current_revision(engine), head_revision()
        if current == head:
            return head
        if path is not None and current is not None:
            folder = backup_dir or path.parent / "backups"
            target = (
                folder / f"{path.stem}-before-{head}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.sqlite3"
            )
            saved = backup(engine, target)
            log.info("db.backup", path=str(saved), revision=current)
        try:
            upgrade(engine)
        except DBAPIError as err:
            if getattr(err.orig, "pgcode", None) != INSUFFICIENT_PRIVILEGE:
                raise
            raise UserError(_no_schema_rights(engine, err, current, head)) from err
        log.info("db.upgraded", from_revision=current, to_revision=head)
    return head


INSUFFICIENT_PRIVILEGE = "42501"  # PostgreSQL's SQLSTATE for "permission denied"


def _no_schema_rights(engine: Engine, err: DBAPIError, current: str | None, head: str) -> str:
    """The sentence for a role that may write rows but not change the schema (the plant's
    line, workstation and page roles, docs/deploy.md): nothing was changed, since
    PostgreSQL runs the whole upgrade in one transaction."""
    role = engine.url.username
    if role is None:  # libpq's default, the login name: ask the server who it was
        try:
            with engine.connect() as conn:
                role = str(conn.execute(text("SELECT current_user")).scalar_one())
        except DBAPIError:
            role = "this connection's role"
    at = f"at schema {current}" if current else "empty"
    return (
        f"the PostgreSQL role '{role}' may not change the schema of {describe(engine.url)} "
        f"({_first_line(err.orig)}), which is {at} while this version needs {head}; run "
        "'padformer-edge db upgrade --db URL' with the URL of the role that owns the "
        "database (docs/deploy.md, Roles), then try again."
    )


def integrity_errors(engine: Engine) -> list[str]:
    """SQLite's own consistency check; an empty list means the file is sound."""
    with engine.connect() as conn:
        rows = [r[0] for r in conn.execute(text("PRAGMA integrity_check")).all()]
    return [] if rows == ["ok"] else rows


def open_checked(db: str | None = None) -> Engine:
    """A read-only engine for CLI readers, refusing a database that is not at head."""
    engine = open_engine(db, read_only=True)
    require_head(engine, db or "")
    return engine
