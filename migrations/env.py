"""Alembic's entry point: run the revisions on the connection the caller hands over.

``padformer_edge.store.migrations`` opens the connection (with the store's pragmas and
locking) and passes it in ``config.attributes["connection"]``; this file never opens a
database on its own, so every migration path shares the same engine set-up.
"""

from __future__ import annotations

from alembic import context

from padformer_edge.store.models import Base

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through padformer_edge.store.migrations, not alembic")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
    render_as_batch=True,
    # SQLite can roll DDL back too: a revision that fails half-way leaves nothing behind.
    transactional_ddl=True,
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
