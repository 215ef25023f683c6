"""The history's tables as SQLAlchemy 2 ORM classes, for code that works with objects.

Each class is mapped onto its table in ``tables`` (the one definition of the columns,
indexes and constraints, which Alembic's head must match); this module adds only what
the ORM needs on top: typed attributes and the relationships between the rows. The
daemon's write path, the reviews and ``results show`` use these classes; plain reads
such as ``results list`` and the page's lists query the Core tables and never import
the ORM.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import DeclarativeBase, Mapped, relationship

from padformer_edge.store import published_tables as published_tables  # registers its tables
from padformer_edge.store import tables

# Re-exported: the states are part of the tables' vocabulary, defined without SQLAlchemy.
from padformer_edge.store.tables import NAMING_CONVENTION as NAMING_CONVENTION
from padformer_edge.store.tables import utc_now as utc_now
from padformer_edge.store.vocabulary import AlertState as AlertState
from padformer_edge.store.vocabulary import ReviewVerdict as ReviewVerdict
from padformer_edge.store.vocabulary import Status as Status


class Base(DeclarativeBase):
    metadata = tables.metadata


class Inspection(Base):
    """One camera file and what the detector said about it; also the daemon's work queue."""

    __table__ = tables.inspections

    id: Mapped[int]
    line: Mapped[str]
    camera: Mapped[str]
    product: Mapped[str]
    source_path: Mapped[str]
    sha256: Mapped[str]
    size_bytes: Mapped[int]
    status: Mapped[Status]
    attempts: Mapped[int]
    error: Mapped[str | None]
    score: Mapped[float | None]
    threshold: Mapped[float | None]
    is_anomaly: Mapped[bool | None]
    heatmap_path: Mapped[str | None]
    model_sha256: Mapped[str | None]
    profile_version: Mapped[int | None]
    detect_ms: Mapped[float | None]
    queue_ms: Mapped[float | None]
    part_box: Mapped[str | None]
    part_cut: Mapped[bool | None]
    discovered_at: Mapped[datetime]
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]

    alerts: Mapped[list[Alert]] = relationship(
        back_populates="inspection", order_by="Alert.id", passive_deletes=True
    )
    review: Mapped[Review | None] = relationship(
        back_populates="inspection", passive_deletes=True, uselist=False
    )


class Alert(Base):
    """Outbox row: written with the result, delivered later by the alert dispatcher."""

    __table__ = tables.alerts

    id: Mapped[int]
    inspection_id: Mapped[int]
    line: Mapped[str]
    sink: Mapped[str]
    payload: Mapped[str]
    state: Mapped[AlertState]
    attempts: Mapped[int]
    next_attempt_at: Mapped[datetime]
    last_error: Mapped[str | None]
    created_at: Mapped[datetime]
    sent_at: Mapped[datetime | None]

    inspection: Mapped[Inspection] = relationship(back_populates="alerts")


class DaemonHeartbeat(Base):
    """A line's daemon's last sign of life, one row per line (see ``tables``)."""

    __table__ = tables.daemon_heartbeat

    id: Mapped[int]
    line: Mapped[str]
    beat_at: Mapped[datetime]
    interval_s: Mapped[float]
    started_at: Mapped[datetime]
    pid: Mapped[int]
    host: Mapped[str]
    status: Mapped[str]


class Review(Base):
    """An operator's judgement of one inspection: a true defect or a false alarm (one
    per inspection; see ``tables``)."""

    __table__ = tables.reviews

    inspection_id: Mapped[int]
    line: Mapped[str]
    verdict: Mapped[ReviewVerdict]
    note: Mapped[str | None]
    reviewer: Mapped[str]
    reviewed_at: Mapped[datetime]

    inspection: Mapped[Inspection] = relationship(back_populates="review")
