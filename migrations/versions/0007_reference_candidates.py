"""Reference candidates, and the profile version that scored each inspection.

``reference_candidates`` holds good parts offered as new references for their profile
(reviewed as false alarms, or confidently good on a profile that opted in) and the
engineer's decision on each. ``inspections.profile_version`` names the version of the
profile (``profile.yaml``'s ``version``) that scored the row; rows stored before stay
NULL, since which version scored them was not recorded.

Revision ID: 0007
Revises: 0006
Created: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _enum(name: str, *values: str) -> sa.Enum:
    return sa.Enum(*values, name=name, native_enum=False, create_constraint=True, length=16)


def upgrade() -> None:
    op.create_table(
        "reference_candidates",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("inspection_id", sa.Integer(), nullable=False),
        sa.Column("product", sa.String(length=128), nullable=False),
        sa.Column("image_path", sa.Text(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=True),
        sa.Column("model_sha256", sa.String(length=64), nullable=True),
        sa.Column("origin", _enum("candidate_origin", "reviewed", "confident"), nullable=False),
        sa.Column(
            "state", _enum("candidate_state", "pending", "approved", "rejected"), nullable=False
        ),
        sa.Column("proposed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("proposed_by", sa.String(length=128), nullable=True),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=128), nullable=True),
        sa.Column("note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_reference_candidates")),
        sa.UniqueConstraint(
            "product", "sha256", name=op.f("uq_reference_candidates_product_sha256")
        ),
    )
    with op.batch_alter_table("reference_candidates", schema=None) as batch_op:
        batch_op.create_index(
            "ix_reference_candidates_product_state", ["product", "state"], unique=False
        )
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.add_column(sa.Column("profile_version", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.drop_column("profile_version")
    with op.batch_alter_table("reference_candidates", schema=None) as batch_op:
        batch_op.drop_index("ix_reference_candidates_product_state")
    op.drop_table("reference_candidates")
