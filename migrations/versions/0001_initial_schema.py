"""Inspections (also the daemon's queue) and the alert outbox.

Revision ID: 0001
Revises: none
Created: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "inspections",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("camera", sa.String(length=128), nullable=False),
        sa.Column("product", sa.String(length=128), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column(
            "status",
            sa.Enum(
                "pending",
                "processing",
                "done",
                "failed",
                "skipped",
                name="status",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("score", sa.Float(), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("is_anomaly", sa.Boolean(), nullable=True),
        sa.Column("heatmap_path", sa.Text(), nullable=True),
        sa.Column("model_sha256", sa.String(length=64), nullable=True),
        sa.Column("detect_ms", sa.Float(), nullable=True),
        sa.Column("queue_ms", sa.Float(), nullable=True),
        sa.Column("discovered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inspections")),
        sa.UniqueConstraint(
            "source_path", "sha256", name=op.f("uq_inspections_source_path_sha256")
        ),
    )
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.create_index(
            "ix_inspections_camera_discovered_at", ["camera", "discovered_at"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_inspections_discovered_at"), ["discovered_at"], unique=False
        )
        batch_op.create_index(
            "ix_inspections_product_discovered_at", ["product", "discovered_at"], unique=False
        )
        batch_op.create_index("ix_inspections_status_id", ["status", "id"], unique=False)

    op.create_table(
        "alerts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("inspection_id", sa.Integer(), nullable=False),
        sa.Column("sink", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column(
            "state",
            sa.Enum(
                "pending",
                "sent",
                "dead",
                name="alert_state",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["inspection_id"],
            ["inspections.id"],
            name=op.f("fk_alerts_inspection_id_inspections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_alerts")),
    )
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_alerts_inspection_id"), ["inspection_id"], unique=False
        )
        batch_op.create_index(
            "ix_alerts_state_next_attempt_at", ["state", "next_attempt_at"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("alerts", schema=None) as batch_op:
        batch_op.drop_index("ix_alerts_state_next_attempt_at")
        batch_op.drop_index(batch_op.f("ix_alerts_inspection_id"))

    op.drop_table("alerts")
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.drop_index("ix_inspections_status_id")
        batch_op.drop_index("ix_inspections_product_discovered_at")
        batch_op.drop_index(batch_op.f("ix_inspections_discovered_at"))
        batch_op.drop_index("ix_inspections_camera_discovered_at")

    op.drop_table("inspections")
