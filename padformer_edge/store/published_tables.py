"""The tables of profiles published from the workstation and the lines they run on.

Apart from ``tables`` (which defines the inspection history) because a published profile
is not history: it is what the lines are told to run. They are registered on the same
``MetaData``, so Alembic's head and the tests see one schema; ``models`` imports this
module so that every user of ``Base.metadata`` has them.

A version's files are kept in the database itself (``LargeBinary``: ``bytea`` on
PostgreSQL, a BLOB on SQLite) rather than on a share: a line that reaches the database
reaches everything it runs, and one backup (``pg_dump``) holds the history and the
profiles together. Each file carries the sha256 taken on the workstation when it was
published; the line recomputes it before anything is installed.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Table,
    UniqueConstraint,
)

from padformer_edge.store.lines import MAX_LINE_CHARS
from padformer_edge.store.tables import UTCDateTime, metadata, utc_now

MAX_PROFILE_CHARS = 64  # profiles.layout.NAME_PATTERN allows 64 characters
MAX_FILE_PATH_CHARS = 512

# One version of one profile as the workstation published it: its identity (name and
# ``profile.yaml``'s version), who published it, and what it scores with. A version is
# published once; publishing the same files again is a no-op, other files a refusal.
published_profiles = Table(
    "published_profiles",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(MAX_PROFILE_CHARS), nullable=False),
    Column("version", Integer, nullable=False),
    Column("published_at", UTCDateTime, nullable=False, default=utc_now),
    Column("published_by", String(128), nullable=False),
    Column("metric", String(32), nullable=False),
    Column("runtime", String(16), nullable=False),
    Column("model_sha256", String(64), nullable=False),
    Column("comparator_sha256", String(64)),
    Column("threshold", Float, nullable=False),
    UniqueConstraint("name", "version"),
)

# Every file of a published version, by its path inside the profile folder.
published_files = Table(
    "published_files",
    metadata,
    Column(
        "published_id",
        Integer,
        ForeignKey("published_profiles.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("path", String(MAX_FILE_PATH_CHARS), primary_key=True),
    Column("sha256", String(64), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("content", LargeBinary, nullable=False),
)

# Which version of a profile each line runs: one row per decision, never updated, so
# the newest row of a (line, profile) is what the line runs and the earlier ones are
# what a rollback goes back to. ``action`` says whether a person assigned the version or
# rolled back to it.
profile_assignments = Table(
    "profile_assignments",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("line", String(MAX_LINE_CHARS), nullable=False),
    Column("profile", String(MAX_PROFILE_CHARS), nullable=False),
    Column("version", Integer, nullable=False),
    Column("action", String(16), nullable=False),
    Column("assigned_at", UTCDateTime, nullable=False, default=utc_now),
    Column("assigned_by", String(128), nullable=False),
    Index("ix_profile_assignments_line_profile_id", "line", "profile", "id"),
)
