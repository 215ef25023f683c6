"""The plant outbox: what a line owes the plant's PostgreSQL database.

``plant_forwarding`` lists the lines of this database that forward to a plant database,
``plant_outbox`` the changes they have not forwarded yet (``store.outbox``). The triggers
that fill the outbox are installed by the daemon that forwards (they are rebuilt with
every table a batch migration rebuilds, so the daemon recreates them after migrating),
not here; downgrading drops them with the tables.

Revision ID: 0010
Revises: 0009
Created: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

LINE_CHARS = 64
TRIGGERS = (
    "plant_outbox_inspection_insert",
    "plant_outbox_inspection_update",
    "plant_outbox_review_insert",
    "plant_outbox_review_update",
    "plant_outbox_review_history_insert",
    "plant_outbox_alert_insert",
    "plant_outbox_alert_update",
    "plant_outbox_drift_insert",  # added to store.outbox after this revision: dropped too
    "plant_outbox_drift_update",
    "plant_outbox_candidate_insert",  # added to store.outbox after this revision: dropped too
    "plant_outbox_candidate_update",
)


def upgrade() -> None:
    op.create_table(
        "plant_forwarding",
        sa.Column("line", sa.String(length=LINE_CHARS), nullable=False),
        sa.Column("plant", sa.Text(), nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("line", name=op.f("pk_plant_forwarding")),
    )
    op.create_table(
        "plant_outbox",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("line", sa.String(length=LINE_CHARS), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("row_id", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plant_outbox")),
    )
    op.create_index("ix_plant_outbox_line_id", "plant_outbox", ["line", "id"], unique=False)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name in TRIGGERS:
            op.execute(sa.text(f"DROP TRIGGER IF EXISTS {name}"))
    op.drop_index("ix_plant_outbox_line_id", table_name="plant_outbox")
    op.drop_table("plant_outbox")
    op.drop_table("plant_forwarding")
