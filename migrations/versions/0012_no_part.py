"""Camera frames: a frame with no part is a status of its own, and a found part's box.

A profile made with a photo of its camera's empty belt finds the part in each frame
before scoring it (``detect.framed``). A frame in which no part shows is ``no_part``:
neither good nor an anomaly, with no score. ``part_box`` records the crop that was
scored, "x0,y0,x1,y1" in frame pixels; ``part_cut`` says the part ran off the frame's
edge, so only what was visible was scored. Rows of profiles without a belt photo keep
both empty.

Downgrading turns ``no_part`` rows into ``skipped`` ones (the earlier states' nearest:
no result) with the reason written in their error column.

Revision ID: 0012
Revises: 0011
Created: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

BEFORE = ("pending", "processing", "done", "failed", "skipped")
AFTER = (*BEFORE, "no_part")


def _status(values: tuple[str, ...]) -> sa.Enum:
    return sa.Enum(*values, name="status", native_enum=False, create_constraint=True, length=16)


def upgrade() -> None:
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.alter_column(
            "status", existing_type=_status(BEFORE), type_=_status(AFTER), existing_nullable=False
        )
        batch_op.add_column(sa.Column("part_box", sa.String(length=64), nullable=True))
        batch_op.add_column(sa.Column("part_cut", sa.Boolean(), nullable=True))


def downgrade() -> None:
    op.execute(
        "UPDATE inspections SET status = 'skipped', error = 'no part in the frame' "
        "WHERE status = 'no_part'"
    )
    with op.batch_alter_table("inspections", schema=None) as batch_op:
        batch_op.drop_column("part_cut")
        batch_op.drop_column("part_box")
        batch_op.alter_column(
            "status", existing_type=_status(AFTER), type_=_status(BEFORE), existing_nullable=False
        )
