"""The page's read-only engine: the store's checked reader, set up for many viewers.

On PostgreSQL (a plant's database) two things differ from a CLI reader's engine:

- Queries are planned without parallel workers (``max_parallel_workers_per_gather``
  0 on each of the page's connections). Every page query is bounded (a page of rows on
  an index, a window of the time index), and for such a query PostgreSQL's parallel
  plan starts two worker processes that each walk the same index: a line's reviewed
  rows, one in a hundred, took 40 to 50 ms that way on a 2-core PC against 12 to 15 ms
  on one process, and the workers took the cores the other pages were rendered on. A
  web server wants each page's query on one core; the database server's own setting is
  left alone for everything else.
- Each connection is in autocommit: a page's statements run without ``BEGIN`` before
  them and ``ROLLBACK`` when the connection goes back to the pool, two round trips of
  a handful per page, each one giving up the interpreter lock to the other renders.
  A page only reads, and at PostgreSQL's default isolation (read committed) each
  statement sees its own snapshot inside a transaction too, so nothing a page shows
  changes. It is set on the driver's connection once, not as SQLAlchemy's isolation
  level, which psycopg2 would set and reset on every checkout at a round trip each.
  The export's server-side cursor needs a transaction and asks for one
  (``queries.iter_history``); its connection is put back in autocommit at its next
  checkout.
- As many connections as pages are rendered at once (``RENDERS``) are opened when the
  engine is, one after another. A PostgreSQL connection is a server process started
  and authenticated, a few milliseconds each; opened on demand, the first viewers after
  a start, arriving together, each waited for one while holding a render slot.

SQLite needs neither: it has no parallel plans, and opening its file is cheap.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, event

from padformer_edge.store.migrations import open_checked


def _serial_plans(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET max_parallel_workers_per_gather = 0")
    cursor.close()
    dbapi_connection.commit()
    dbapi_connection.autocommit = True


def _autocommit(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
    if not dbapi_connection.autocommit:  # an export's connection (``iter_history``)
        dbapi_connection.autocommit = True


def open_reader(db: str | None, connections: int) -> Engine:
    """The read-only engine over ``db`` (refused unless at head, as ``open_checked``);
    on PostgreSQL with serial plans, in autocommit, and ``connections`` connections
    open."""
    engine = open_checked(db)
    if engine.dialect.name != "postgresql":
        return engine
    event.listen(engine, "connect", _serial_plans)
    event.listen(engine, "checkout", _autocommit)
    engine.dispose()  # the check's connection was made without the setting
    opened = [engine.connect() for _ in range(connections)]
    for conn in opened:
        conn.close()  # back to the pool, open
    return engine
