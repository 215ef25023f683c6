"""Named users with hashed tokens, and every review kept: a changed verdict is a new row.

``users`` holds the people who log in to the page by name, their role and a salted
hash of their token. ``review_history`` holds every verdict given; the reviews already
stored become its first rows, so an upgraded database shows the history it has.

Revision ID: 0006
Revises: 0005
Created: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_history",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("inspection_id", sa.Integer(), nullable=False),
        sa.Column(
            "verdict",
            sa.Enum(
                "true_defect",
                "false_alarm",
                name="review_verdict",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("note", sa.Text(), nullable=True),
        sa.Column("reviewer", sa.String(length=128), nullable=False),
        sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["inspection_id"],
            ["inspections.id"],
            name=op.f("fk_review_history_inspection_id_inspections"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_review_history")),
    )
    with op.batch_alter_table("review_history", schema=None) as batch_op:
        batch_op.create_index(
            "ix_review_history_inspection_id_id", ["inspection_id", "id"], unique=False
        )
    op.execute(
        "INSERT INTO review_history (inspection_id, verdict, note, reviewer, reviewed_at) "
        "SELECT inspection_id, verdict, note, reviewer, reviewed_at FROM reviews "
        "ORDER BY reviewed_at, inspection_id"
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column(
            "role",
            sa.Enum(
                "operator",
                "engineer",
                name="user_role",
                native_enum=False,
                create_constraint=True,
                length=16,
            ),
            nullable=False,
        ),
        sa.Column("token_hash", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("token_set_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
        sa.UniqueConstraint("name", name=op.f("uq_users_name")),
    )


def downgrade() -> None:
    op.drop_table("users")
    with op.batch_alter_table("review_history", schema=None) as batch_op:
        batch_op.drop_index("ix_review_history_inspection_id_id")
    op.drop_table("review_history")
