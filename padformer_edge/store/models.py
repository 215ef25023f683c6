"""The tables of the inspection history, as SQLAlchemy 2 typed models.

The schema is owned by Alembic (``migrations/``); these classes must agree with the head
revision, and a test compares the two with autogenerate so that they cannot drift apart.
Constraint names follow one convention so batch migrations on SQLite can find them.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

# Re-exported: the states are part of the tables' vocabulary, defined without SQLAlchemy.
from padformer_edge.store.vocabulary import AlertState as AlertState
from padformer_edge.store.vocabulary import ReviewVerdict as ReviewVerdict
from padformer_edge.store.vocabulary import Status as Status

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
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


class Inspection(Base):
    """One camera file and what the detector said about it; also the daemon's work queue."""

    __tablename__ = "inspections"
    __table_args__ = (
        UniqueConstraint("source_path", "sha256"),
        Index("ix_inspections_status_id", "status", "id"),
        Index("ix_inspections_camera_discovered_at", "camera", "discovered_at"),
        Index("ix_inspections_product_discovered_at", "product", "discovered_at"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    camera: Mapped[str] = mapped_column(String(128))
    product: Mapped[str] = mapped_column(String(128))
    source_path: Mapped[str] = mapped_column(Text)
    sha256: Mapped[str] = mapped_column(String(64))
    size_bytes: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[Status] = mapped_column(_enum(Status, "status"), default=Status.pending)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    error: Mapped[str | None] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float)
    threshold: Mapped[float | None] = mapped_column(Float)
    is_anomaly: Mapped[bool | None] = mapped_column(Boolean())
    heatmap_path: Mapped[str | None] = mapped_column(Text)
    model_sha256: Mapped[str | None] = mapped_column(String(64))
    detect_ms: Mapped[float | None] = mapped_column(Float)
    queue_ms: Mapped[float | None] = mapped_column(Float)
    discovered_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now, index=True)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    alerts: Mapped[list[Alert]] = relationship(
        back_populates="inspection", order_by="Alert.id", passive_deletes=True
    )
    review: Mapped[Review | None] = relationship(
        back_populates="inspection", passive_deletes=True, uselist=False
    )


class Alert(Base):
    """Outbox row: written with the result, delivered later by the alert dispatcher."""

    __tablename__ = "alerts"
    __table_args__ = (Index("ix_alerts_state_next_attempt_at", "state", "next_attempt_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    inspection_id: Mapped[int] = mapped_column(
        ForeignKey("inspections.id", ondelete="CASCADE"), index=True
    )
    sink: Mapped[str] = mapped_column(String(64))
    payload: Mapped[str] = mapped_column(Text)
    state: Mapped[AlertState] = mapped_column(
        _enum(AlertState, "alert_state"), default=AlertState.pending
    )
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)
    sent_at: Mapped[datetime | None] = mapped_column(UTCDateTime)

    inspection: Mapped[Inspection] = relationship(back_populates="alerts")


class DaemonHeartbeat(Base):
    """The daemon's last sign of life, one row per database (``id`` is always 1).

    It lives in the database the daemon writes, not in a file on the machine, so a page
    reading this database reports this database's daemon and no other. ``interval_s`` is
    how often the daemon promises to beat, so a reader can judge staleness without
    knowing the daemon's settings.
    """

    __tablename__ = "daemon_heartbeat"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime)
    interval_s: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    pid: Mapped[int] = mapped_column(Integer)
    host: Mapped[str] = mapped_column(String(255))
    status: Mapped[str] = mapped_column(Text)


class Review(Base):
    """An operator's judgement of one inspection: a true defect or a false alarm.

    One row per inspection (the inspection id is the key): a second review replaces the
    first, because a calibration needs one label per part and the page shows the current
    one; the replaced verdict is kept in the structured log (``review.saved``). The
    verdict is indexed with the inspection id, so counting reviews by verdict and
    filtering history by verdict read the index alone.
    """

    __tablename__ = "reviews"
    __table_args__ = (Index("ix_reviews_verdict_inspection_id", "verdict", "inspection_id"),)

    inspection_id: Mapped[int] = mapped_column(
        ForeignKey("inspections.id", ondelete="CASCADE"), primary_key=True
    )
    verdict: Mapped[ReviewVerdict] = mapped_column(_enum(ReviewVerdict, "review_verdict"))
    note: Mapped[str | None] = mapped_column(Text)
    reviewer: Mapped[str] = mapped_column(String(128))
    reviewed_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utc_now)

    inspection: Mapped[Inspection] = relationship(back_populates="review")
