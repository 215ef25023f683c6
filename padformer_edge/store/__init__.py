"""The inspection history: one SQLite file by default, PostgreSQL by URL.

``tables`` holds the tables (SQLAlchemy Core), ``models`` the ORM classes mapped onto
them, ``engine`` the connection set-up, ``migrations`` the Alembic migrations and backups,
``queue`` the daemon's write path, ``heartbeat`` the daemon's liveness row and
``history`` the reads the CLI offers (Core only, so they never import the ORM).

This file imports nothing: SQLAlchemy and Alembic take most of a command's start-up,
and ``--help``, ``profile list`` or ``doctor``'s path checks must not pay for them;
``vocabulary`` and ``locations`` hold what those need without SQLAlchemy. Import each
name from the module that defines it (``store.history.list_inspections``).
"""
