"""Paths under the state folder recorded relative to it, so the folder can be moved.

Every ``source_path`` and ``heatmap_path`` that begins with the state folder of the
process running the migration (``PADFORMER_EDGE_STATE_DIR``, systemd's
``STATE_DIRECTORY`` or the XDG state home, as every command finds it) loses that prefix;
readers resolve a relative path against the current state folder. Paths elsewhere (a
camera folder on another disk) stay absolute. The folder is tried as written and with
its symbolic links resolved, since camera folders are recorded resolved.

The rewrite is one ``UPDATE`` per column and prefix, the prefix compared with ``substr``
(not ``LIKE``, whose ``_`` and ``%`` a folder name may contain), on SQLite and PostgreSQL
alike. The downgrade puts the current state folder back in front of every relative path.

Revision ID: 0005
Revises: 0004
Created: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from padformer_edge.store.locations import state_dir

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

COLUMNS = ("source_path", "heatmap_path")


def _prefixes() -> list[str]:
    """The state folder as written and resolved, each ending with one separator."""
    base = state_dir().expanduser()
    forms = [str(base.absolute()).rstrip("/") + "/", str(base.resolve()).rstrip("/") + "/"]
    return list(dict.fromkeys(forms))


def upgrade() -> None:
    for prefix in _prefixes():
        for column in COLUMNS:
            op.execute(
                sa.text(
                    f"UPDATE inspections SET {column} = substr({column}, :start) "
                    f"WHERE substr({column}, 1, :length) = :prefix"
                ).bindparams(start=len(prefix) + 1, length=len(prefix), prefix=prefix)
            )


def downgrade() -> None:
    prefix = _prefixes()[0]
    for column in COLUMNS:
        op.execute(
            sa.text(
                f"UPDATE inspections SET {column} = :prefix || {column} "
                f"WHERE {column} IS NOT NULL AND substr({column}, 1, 1) <> '/'"
            ).bindparams(prefix=prefix)
        )
