"""Drift events: a camera's scores drifted from its profile's calibration, until acknowledged.

Revision ID: 0004
Revises: 0003
Created: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "drift_events",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("camera", sa.String(length=128), nullable=False),
        sa.Column("product", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("statistic", sa.Float(), nullable=False),
        sa.Column("p_value", sa.Float(), nullable=False),
        sa.Column("level", sa.Float(), nullable=False),
        sa.Column("window_size", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("inspection_id", sa.Integer(), nullable=True),
        sa.Column("raised_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("acknowledged_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("acknowledged_by", sa.String(length=128), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_drift_events")),
    )
    with op.batch_alter_table("drift_events", schema=None) as batch_op:
        batch_op.create_index(
            "ix_drift_events_camera_acknowledged_at", ["camera", "acknowledged_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("drift_events", schema=None) as batch_op:
        batch_op.drop_index("ix_drift_events_camera_acknowledged_at")
    op.drop_table("drift_events")
