"""Line identity: every row names its line; daemons claim their line and camera folders.

A ``line`` column on ``inspections``, ``alerts``, ``daemon_heartbeat`` (now one row per
line), ``reviews``, ``review_history``, ``drift_events`` and ``reference_candidates``.
Rows stored before were all written by the one daemon of this database, so they get the
line that daemon runs as: the migration reads it from ``config.attributes["line"]``,
which ``store.migrations`` sets from the daemon's config when the daemon migrates on start
(or from ``db upgrade --line``); without one, the host name, the default line name. A
file's identity becomes (line, path, content): the same path on two line PCs is two
files. ``daemon_claims`` holds what each running daemon holds (``store.claims``).

Downgrading keeps the newest heartbeat only, and fails on a unique constraint if two
lines stored the same path and content.

Revision ID: 0008
Revises: 0007
Created: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from padformer_edge.store.lines import default_line

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

LINE_CHARS = 64
TABLES = (
    "inspections",
    "alerts",
    "daemon_heartbeat",
    "reviews",
    "review_history",
    "drift_events",
    "reference_candidates",
)


def _configured_line() -> str:
    line = op.get_context().config.attributes.get("line") if op.get_context().config else None
    return str(line) if line else default_line()


def upgrade() -> None:
    line = _configured_line()
    for table in TABLES:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column("line", sa.String(length=LINE_CHARS), nullable=True))
        op.execute(sa.text(f"UPDATE {table} SET line = :line").bindparams(line=line))
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column(
                "line", existing_type=sa.String(length=LINE_CHARS), nullable=False
            )
            if table == "inspections":
                batch_op.drop_constraint("uq_inspections_source_path_sha256", type_="unique")
                batch_op.create_unique_constraint(
                    "uq_inspections_line_source_path_sha256", ["line", "source_path", "sha256"]
                )
            elif table == "daemon_heartbeat":
                batch_op.create_unique_constraint("uq_daemon_heartbeat_line", ["line"])
            elif table == "drift_events":
                batch_op.drop_index("ix_drift_events_camera_acknowledged_at")
                batch_op.create_index(
                    "ix_drift_events_line_camera_acknowledged_at",
                    ["line", "camera", "acknowledged_at"],
                    unique=False,
                )
    op.create_table(
        "daemon_claims",
        sa.Column("resource", sa.String(length=1024), nullable=False),
        sa.Column("line", sa.String(length=LINE_CHARS), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ttl_s", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("resource", name=op.f("pk_daemon_claims")),
    )
    with op.batch_alter_table("daemon_claims", schema=None) as batch_op:
        batch_op.create_index("ix_daemon_claims_line", ["line"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("daemon_claims", schema=None) as batch_op:
        batch_op.drop_index("ix_daemon_claims_line")
    op.drop_table("daemon_claims")
    # One heartbeat row again, id 1, as revision 0002 keeps it: the newest beat's.
    op.execute(
        "DELETE FROM daemon_heartbeat WHERE id <> "
        "(SELECT id FROM daemon_heartbeat ORDER BY beat_at DESC, id DESC LIMIT 1)"
    )
    op.execute("UPDATE daemon_heartbeat SET id = 1")
    for table in reversed(TABLES):
        with op.batch_alter_table(table, schema=None) as batch_op:
            if table == "inspections":
                batch_op.drop_constraint("uq_inspections_line_source_path_sha256", type_="unique")
                batch_op.create_unique_constraint(
                    "uq_inspections_source_path_sha256", ["source_path", "sha256"]
                )
            elif table == "daemon_heartbeat":
                batch_op.drop_constraint("uq_daemon_heartbeat_line", type_="unique")
            elif table == "drift_events":
                batch_op.drop_index("ix_drift_events_line_camera_acknowledged_at")
                batch_op.create_index(
                    "ix_drift_events_camera_acknowledged_at",
                    ["camera", "acknowledged_at"],
                    unique=False,
                )
            batch_op.drop_column("line")
