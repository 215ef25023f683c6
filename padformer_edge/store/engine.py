"""Where the database is, and engines configured the same way on every connection.

SQLite settings, each for a reason a line PC has:

- ``journal_mode=WAL``: readers (the CLI, a dashboard) never block the daemon's writer,
  and the writer never blocks them.
- ``synchronous=FULL``: a line PC can lose power at any moment. In WAL mode ``NORMAL``
  can lose the last committed transactions on power loss (the database stays intact but
  a finished inspection and its alert would vanish); ``FULL`` syncs the WAL on every
  commit so a committed row survives. ``benchmarks/store.py`` measures what it costs.
- ``busy_timeout``: a second writer (``results prune`` while the daemon runs) waits for
  the lock instead of failing at once with "database is locked".
- ``foreign_keys=ON``: SQLite ignores foreign keys unless told, and alerts must go with
  their inspection.
- Writers start every transaction with ``BEGIN IMMEDIATE``: taking the write lock up
  front means a transaction that read first can never fail later when it tries to write
  (SQLite cannot upgrade a read lock while another writer is active).
- Readers inside the daemon (the worker's backlog count, intake's look-ups, the outbox
  poll, health checks) go through ``reading(engine)``: a plain deferred ``BEGIN`` that
  never takes the write lock, so frequent polls cannot queue behind a writer, or hold
  up one.
- CLI readers open the file read-only (``mode=ro``), so a history query can never take
  the write lock or change the file, whatever it does.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from sqlalchemy import Connection, Engine, create_engine, event, make_url
from sqlalchemy.engine import URL
from sqlalchemy.exc import ArgumentError

from padformer_edge.errors import UserError

# Re-exported: where the state lives is needed by commands that never open a database.
from padformer_edge.store.locations import STATE_DIR_ENV as STATE_DIR_ENV
from padformer_edge.store.locations import state_dir as state_dir

DB_ENV = "PADFORMER_EDGE_DB"
DEFAULT_DB_NAME = "results.sqlite3"
BUSY_TIMEOUT_MS = 30_000
READ_ONLY_OPTION = "padformer_edge_read_only"  # execution option: begin without the lock


def reading(engine: Engine) -> Connection:
    """A connection for reads only: its transactions begin deferred (``BEGIN``), so they
    share the database with the writer instead of waiting for, or taking, its lock.

    Use it as ``with reading(engine) as conn:``; on PostgreSQL it is a plain connection.
    """
    return engine.connect().execution_options(**{READ_ONLY_OPTION: True})


def resolve_url(db: str | None = None) -> URL:
    """``--db`` if given, else ``$PADFORMER_EDGE_DB``, else the SQLite file in ``state_dir()``.

    A bare path is accepted as a SQLite file, because that is what people type.
    """
    raw = db or os.environ.get(DB_ENV) or str(state_dir() / DEFAULT_DB_NAME)
    if "://" not in raw:
        return URL.create("sqlite", database=str(Path(raw).expanduser().absolute()))
    try:
        url = make_url(raw)
    except ArgumentError as err:
        raise UserError(
            f"database URL '{raw}' is not valid; use a path or "
            "sqlite:///FILE or postgresql://USER@HOST/DB."
        ) from err
    if url.get_backend_name() not in ("sqlite", "postgresql"):
        raise UserError(
            f"database URL '{raw}' names {url.get_backend_name()}; "
            "only sqlite and postgresql are supported."
        )
    if url.drivername == "postgresql":
        # The driver the ``postgresql`` extra installs; SQLAlchemy 2.1 would pick psycopg 3.
        url = url.set(drivername="postgresql+psycopg2")
    if url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:"):
        raise UserError(
            f"database URL '{raw}' has no file; the history must live in a "
            "file, e.g. sqlite:///var/lib/padformer-edge/results.sqlite3."
        )
    return url


def sqlite_path(url: URL) -> Path | None:
    """The database file of a SQLite URL (plain or ``file:`` URI), ``None`` otherwise."""
    if url.get_backend_name() != "sqlite" or not url.database:
        return None
    if url.query.get("uri") == "true" and url.database.startswith("file:"):
        return Path(unquote(url.database.removeprefix("file:")))
    return Path(url.database)


def describe(url: URL) -> str:
    """How to name a database to a person: its file, or its URL without the password."""
    path = sqlite_path(url)
    return str(path) if path else url.render_as_string(hide_password=True)


def _sqlite_uri(path: Path, read_only: bool) -> URL:
    query = {"uri": "true", "mode": "ro"} if read_only else {"uri": "true"}
    return URL.create("sqlite", database=f"file:{quote(path.as_posix())}", query=query)


def open_engine(
    url: URL | str | None = None, *, read_only: bool = False, synchronous: str = "FULL"
) -> Engine:
    """An engine whose every connection carries the settings documented above.

    ``synchronous`` exists only so the benchmark can measure the alternative; the
    product always runs with ``FULL``.
    """
    url = url if isinstance(url, URL) else resolve_url(url)
    path = sqlite_path(url)
    if path is None:
        try:
            engine = create_engine(url, pool_pre_ping=True)
        except ModuleNotFoundError as err:
            raise UserError(
                f"the database driver {err.name} is not installed; install it "
                "with pip install 'padformer-edge[postgresql]'."
            ) from err
        if read_only:
            event.listen(engine, "connect", _postgres_read_only)
        return engine
    if read_only and not path.exists():
        raise UserError(
            f"there is no database at {path}; run 'padformer-edge db upgrade "
            f"--db {path}' to create it, or pass --db with the right file."
        )
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    # check_same_thread off: pooled connections are used by one thread at a time, which
    # the pool guarantees; the default check would refuse the hand-over between threads.
    engine = create_engine(_sqlite_uri(path, read_only), connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the sqlite3 module, decide where transactions begin.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        if not read_only:
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute(f"PRAGMA synchronous = {synchronous}")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        deferred = read_only or conn.get_execution_options().get(READ_ONLY_OPTION, False)
        conn.exec_driver_sql("BEGIN" if deferred else "BEGIN IMMEDIATE")

    return engine


def fold_sqlite_journal(path: Path) -> None:
    """Fold the write-ahead log back into ``path`` and let SQLite delete its side files.

    The last connection to close a WAL database does this, unless it was read-only: a
    ``mode=ro`` reader (every CLI history query) must leave ``-wal`` and ``-shm`` behind,
    since it may not write. A program that read last and owns the folder (the demo)
    calls this once nobody else has the file open, so the folder holds the database
    alone. A connection of its own, not the engine's: the engine's pool could still hold
    connections, and then SQLite would keep the files for them.
    """
    import sqlite3  # the standard library's: one plain connection, opened and closed

    if not path.is_file():
        return
    connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        connection.close()


def _postgres_read_only(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cursor.close()
    dbapi_connection.commit()
