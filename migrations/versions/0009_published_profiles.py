"""Profiles published from the workstation, and which version each line runs.

``published_profiles`` holds one row per published version of a profile (its name and
``profile.yaml``'s version, who published it, what it scores with), ``published_files``
every file of it with its sha256 and bytes, and ``profile_assignments`` each decision
that a line runs a version (assigned or rolled back to), never updated
(``store.published``).

Revision ID: 0009
Revises: 0008
Created: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "published_profiles",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("published_by", sa.String(length=128), nullable=False),
        sa.Column("metric", sa.String(length=32), nullable=False),
        sa.Column("runtime", sa.String(length=16), nullable=False),
        sa.Column("model_sha256", sa.String(length=64), nullable=False),
        sa.Column("comparator_sha256", sa.String(length=64), nullable=True),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_published_profiles")),
        sa.UniqueConstraint("name", "version", name=op.f("uq_published_profiles_name_version")),
    )
    op.create_table(
        "published_files",
        sa.Column("published_id", sa.Integer(), nullable=False),
        sa.Column("path", sa.String(length=512), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("content", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(
            ["published_id"],
            ["published_profiles.id"],
            name=op.f("fk_published_files_published_id_published_profiles"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("published_id", "path", name=op.f("pk_published_files")),
    )
    op.create_table(
        "profile_assignments",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("line", sa.String(length=64), nullable=False),
        sa.Column("profile", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=False),
        sa.Column("assigned_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("assigned_by", sa.String(length=128), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_profile_assignments")),
    )
    with op.batch_alter_table("profile_assignments", schema=None) as batch_op:
        batch_op.create_index(
            "ix_profile_assignments_line_profile_id", ["line", "profile", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("profile_assignments", schema=None) as batch_op:
        batch_op.drop_index("ix_profile_assignments_line_profile_id")
    op.drop_table("profile_assignments")
    op.drop_table("published_files")
    op.drop_table("published_profiles")
