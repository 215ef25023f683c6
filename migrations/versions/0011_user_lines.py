"""Users limited to lines: the lines a user of a plant database may see and review.

``user_lines`` holds one row per (user, line) a user is limited to; a user with no row
sees every line, as every user did before (``store.users``). The rows go with their user
(``ON DELETE CASCADE``).

Revision ID: 0011
Revises: 0010
Created: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

LINE_CHARS = 64


def upgrade() -> None:
    op.create_table(
        "user_lines",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("line", sa.String(length=LINE_CHARS), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_user_lines_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("user_id", "line", name=op.f("pk_user_lines")),
    )


def downgrade() -> None:
    op.drop_table("user_lines")
