"""The tables of the inspection history, defined once, in SQLAlchemy Core.

The schema is owned by Alembic (``migrations/``); these tables must agree with the head
revision, and a test compares the two with autogenerate so that they cannot drift apart.
Constraint names follow one convention so batch migrations on SQLite can find them.

They are Core ``Table`` objects rather than ORM classes so that a reader such as
``results list`` can query them without importing SQLAlchemy's ORM, a large part of that
command's start-up. ``models`` maps its ORM classes (used by the daemon's write path, the
reviews and ``results show``) onto these same tables: one definition of each column.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator

from padformer_edge.store.lines import MAX_LINE_CHARS
from padformer_edge.store.vocabulary import (
    AlertState,
    CandidateOrigin,
    CandidateState,
    ReviewVerdict,
    Role,
    Status,
)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING_CONVENTION)


class UTCDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes in, aware UTC datetimes out, on every backend.

    SQLite has no time zones, so values are stored as naive UTC; PostgreSQL gets
    ``timestamptz``. Naive input is refused: a local wall-clock time stored as if it were
    UTC would silently shift every time filter by the plant's offset.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("timestamps must be timezone-aware (UTC)")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _enum(cls: type[enum.StrEnum], name: str) -> Enum:
    # A CHECK constraint rather than a native PostgreSQL enum type: adding a state later is
    # then an ordinary batch migration on both backends.
    return Enum(
        cls,
        name=name,
        native_enum=False,
        create_constraint=True,
        length=16,
        values_callable=lambda members: [m.value for m in members],
    )


def _cascade_to_inspection() -> ForeignKey:
    return ForeignKey("inspections.id", ondelete="CASCADE")


def _line() -> Column[str]:
    """The line the row belongs to (``store.lines``): the daemon's configured name, or
    the line of the inspection a review or candidate is about."""
    return Column("line", String(MAX_LINE_CHARS), nullable=False)


# One camera file and what the detector said about it; also the daemon's work queue.
inspections = Table(
    "inspections",
    metadata,
    Column("id", Integer, primary_key=True),
    _line(),
    Column("camera", String(128), nullable=False),
    Column("product", String(128), nullable=False),
    Column("source_path", Text, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("status", _enum(Status, "status"), nullable=False, default=Status.pending),
    Column("attempts", Integer, nullable=False, default=0),
    Column("error", Text),
    Column("score", Float),
    Column("threshold", Float),
    Column("is_anomaly", Boolean()),
    Column("heatmap_path", Text),
    Column("model_sha256", String(64)),
    # The profile version (``profile.yaml``'s ``version``) that scored the row: a refresh
    # or rollback changes references and threshold under the same model.
    Column("profile_version", Integer),
    Column("detect_ms", Float),
    Column("queue_ms", Float),
    Column("discovered_at", UTCDateTime, nullable=False, default=utc_now, index=True),
    Column("started_at", UTCDateTime),
    Column("finished_at", UTCDateTime),
    # A framed profile's crop that was scored, "x0,y0,x1,y1" in frame pixels, and whether
    # the part ran off the frame's edge (only what was visible was scored).
    Column("part_box", String(64)),
    Column("part_cut", Boolean()),
    # The same path on two line PCs is two files: the line is part of a file's identity.
    UniqueConstraint("line", "source_path", "sha256"),
    Index("ix_inspections_status_id", "status", "id"),
    Index("ix_inspections_camera_discovered_at", "camera", "discovered_at"),
    Index("ix_inspections_product_discovered_at", "product", "discovered_at"),
)

# Outbox row: written with the result, delivered later by the alert dispatcher.
alerts = Table(
    "alerts",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("inspection_id", Integer, _cascade_to_inspection(), nullable=False, index=True),
    _line(),
    Column("sink", String(64), nullable=False),
    Column("payload", Text, nullable=False),
    Column("state", _enum(AlertState, "alert_state"), nullable=False, default=AlertState.pending),
    Column("attempts", Integer, nullable=False, default=0),
    Column("next_attempt_at", UTCDateTime, nullable=False, default=utc_now),
    Column("last_error", Text),
    Column("created_at", UTCDateTime, nullable=False, default=utc_now),
    Column("sent_at", UTCDateTime),
    Index("ix_alerts_state_next_attempt_at", "state", "next_attempt_at"),
)

# Each line's daemon's last sign of life, one row per line. It lives in the database the
# daemon writes, not in a file on the machine, so a page reading this database reports
# this database's daemons and no other. ``interval_s`` is how often the daemon promises
# to beat, so a reader can judge staleness without its settings.
daemon_heartbeat = Table(
    "daemon_heartbeat",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("line", String(MAX_LINE_CHARS), nullable=False, unique=True),
    Column("beat_at", UTCDateTime, nullable=False),
    Column("interval_s", Float, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("host", String(255), nullable=False),
    Column("status", Text, nullable=False),
)

# An operator's current judgement of one inspection: a true defect or a false alarm. One
# row per inspection (the inspection id is the key): a calibration needs one label per
# part and the page shows the latest one. Every verdict ever given, the replaced ones
# included, is a row of ``review_history`` written in the same transaction. The verdict
# is indexed with the inspection id, so counting reviews by verdict and filtering history
# by verdict read the index alone.
reviews = Table(
    "reviews",
    metadata,
    Column("inspection_id", Integer, _cascade_to_inspection(), primary_key=True),
    _line(),
    Column("verdict", _enum(ReviewVerdict, "review_verdict"), nullable=False),
    Column("note", Text),
    Column("reviewer", String(128), nullable=False),
    Column("reviewed_at", UTCDateTime, nullable=False, default=utc_now),
    Index("ix_reviews_verdict_inspection_id", "verdict", "inspection_id"),
)

# Every review given, oldest first: a changed verdict is a new row, never an update, so
# who said what and when stays on record (``reviews`` holds the latest of each
# inspection). The reviewer is a name, not a key of ``users``: removing a user keeps
# what they reviewed.
review_history = Table(
    "review_history",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("inspection_id", Integer, _cascade_to_inspection(), nullable=False),
    _line(),
    Column("verdict", _enum(ReviewVerdict, "review_verdict"), nullable=False),
    Column("note", Text),
    Column("reviewer", String(128), nullable=False),
    Column("reviewed_at", UTCDateTime, nullable=False, default=utc_now),
    Index("ix_review_history_inspection_id_id", "inspection_id", "id"),
)

# The people who log in to the page by name (``padformer-edge users``). Only a hash of
# each token is kept (``store.tokens``: scrypt with a salt of the user's own), so the
# database read by anyone leaks no token. ``token_set_at`` changes with a reset, which
# also ends the user's open sessions on the page.
users = Table(
    "users",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(64), nullable=False, unique=True),
    Column("role", _enum(Role, "user_role"), nullable=False),
    Column("token_hash", String(255), nullable=False),
    Column("created_at", UTCDateTime, nullable=False, default=utc_now),
    Column("token_set_at", UTCDateTime, nullable=False, default=utc_now),
)

# The lines a user is limited to, one row per (user, line): a user with no row sees and
# reviews every line (``store.users``). Removing the user removes their rows.
user_lines = Table(
    "user_lines",
    metadata,
    Column("user_id", Integer, ForeignKey("users.id", ondelete="CASCADE"), primary_key=True),
    Column("line", String(MAX_LINE_CHARS), primary_key=True),
)

# A drift a camera's recent scores showed against its profile's calibration (the daemon's
# ``drift`` monitor): which test, how sure, and until when operators had not yet seen it.
# Its alerts go through the outbox like any other, tied to the last inspection of the
# window; the event itself has no foreign key, so pruning old inspections keeps it. An
# open event (not acknowledged) also stops the same camera raising another one.
drift_events = Table(
    "drift_events",
    metadata,
    Column("id", Integer, primary_key=True),
    _line(),
    Column("camera", String(128), nullable=False),
    Column("product", String(128), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("statistic", Float, nullable=False),
    Column("p_value", Float, nullable=False),
    Column("level", Float, nullable=False),
    Column("window_size", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    Column("inspection_id", Integer),
    Column("raised_at", UTCDateTime, nullable=False, default=utc_now),
    Column("acknowledged_at", UTCDateTime),
    Column("acknowledged_by", String(128)),
    Index("ix_drift_events_line_camera_acknowledged_at", "line", "camera", "acknowledged_at"),
)

# Good parts offered as new references for their profile (``profile refresh``): an
# inspection reviewed as a false alarm, or (when the profile opts in) one scored far below
# its threshold. The picture is copied into the state folder when the candidate is made
# (``image_path``, recorded like heatmaps), because camera folders are cleaned while a
# candidate waits. No foreign key to ``inspections``: pruning old inspections keeps the
# candidate and the engineer's decision. One candidate per picture (sha256) and profile.
reference_candidates = Table(
    "reference_candidates",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("inspection_id", Integer, nullable=False),
    _line(),
    Column("product", String(128), nullable=False),
    Column("image_path", Text, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("score", Float, nullable=False),
    Column("threshold", Float),
    Column("model_sha256", String(64)),
    Column("origin", _enum(CandidateOrigin, "candidate_origin"), nullable=False),
    Column("state", _enum(CandidateState, "candidate_state"), nullable=False),
    Column("proposed_at", UTCDateTime, nullable=False, default=utc_now),
    Column("proposed_by", String(128)),
    Column("decided_at", UTCDateTime),
    Column("decided_by", String(128)),
    Column("note", Text),
    UniqueConstraint("product", "sha256"),
    Index("ix_reference_candidates_product_state", "product", "state"),
)

# What a running daemon holds so that no second daemon runs it at once (``store.claims``):
# its line (``resource`` ``line NAME``) and each camera folder it watches (``folder
# HOST:PATH``, the host the folder is on and its resolved path, so one path on two PCs is
# two folders). The holder renews ``renewed_at`` while it runs; a claim is held while it
# is younger than ``ttl_s``, so a PC that died lets go by itself.
daemon_claims = Table(
    "daemon_claims",
    metadata,
    Column("resource", String(1024), primary_key=True),
    Column("line", String(MAX_LINE_CHARS), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("renewed_at", UTCDateTime, nullable=False),
    Column("ttl_s", Float, nullable=False),
    Index("ix_daemon_claims_line", "line"),
)

# The lines of this database whose changes go on to a plant database (``store.outbox``):
# a daemon with ``plant_database`` set registers its line here at start, and removes it
# when started without. The capture triggers write outbox rows only for lines listed, so
# a line PC with no plant keeps no outbox.
plant_forwarding = Table(
    "plant_forwarding",
    metadata,
    Column("line", String(MAX_LINE_CHARS), primary_key=True),
    Column("plant", Text, nullable=False),
    Column("since", UTCDateTime, nullable=False, default=utc_now),
)

# What a forwarding line still owes the plant database: one row per change of a result,
# review, review history entry, alert, drift event or reference candidate (``kind`` and
# the changed row's local id), written by a trigger in the same transaction as the
# change, deleted once the plant database has committed it (``daemon.forwarder``). Rows
# name the changed row, not its values: the forwarder sends the row as it is when it
# forwards, so a change forwarded twice writes the same values twice, never a second row.
plant_outbox = Table(
    "plant_outbox",
    metadata,
    Column("id", Integer, primary_key=True),
    _line(),
    Column("kind", String(16), nullable=False),
    Column("row_id", Integer, nullable=False),
    Index("ix_plant_outbox_line_id", "line", "id"),
)
