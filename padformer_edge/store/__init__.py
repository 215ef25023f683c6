"""The inspection history: one SQLite file by default, PostgreSQL by URL.

``models`` holds the tables, ``engine`` the connection set-up, ``schema`` the Alembic
migrations and backups, ``queue`` the daemon's write path and ``history`` the reads the
CLI offers. The names below are the whole public surface.

Names resolve lazily (PEP 562): SQLAlchemy and Alembic take most of a command's
start-up, and ``--help``, ``profile list`` or ``doctor``'s path checks must not pay for
them; ``vocabulary`` and ``locations`` hold what those need without SQLAlchemy.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "open_engine": "padformer_edge.store.engine",
    "resolve_url": "padformer_edge.store.engine",
    "state_dir": "padformer_edge.store.engine",
    "Filters": "padformer_edge.store.history",
    "GroupStats": "padformer_edge.store.history",
    "PruneResult": "padformer_edge.store.history",
    "export": "padformer_edge.store.history",
    "get_inspection": "padformer_edge.store.history",
    "list_inspections": "padformer_edge.store.history",
    "prune": "padformer_edge.store.history",
    "stats": "padformer_edge.store.history",
    "Heartbeat": "padformer_edge.store.heartbeat",
    "read_heartbeat": "padformer_edge.store.heartbeat",
    "record_heartbeat": "padformer_edge.store.heartbeat",
    "DaemonHeartbeat": "padformer_edge.store.models",
    "Alert": "padformer_edge.store.models",
    "AlertState": "padformer_edge.store.models",
    "Inspection": "padformer_edge.store.models",
    "Status": "padformer_edge.store.models",
    "AlertRequest": "padformer_edge.store.queue",
    "DetectionOutcome": "padformer_edge.store.queue",
    "claim_batch": "padformer_edge.store.queue",
    "complete": "padformer_edge.store.queue",
    "due_alerts": "padformer_edge.store.queue",
    "enqueue": "padformer_edge.store.queue",
    "fail": "padformer_edge.store.queue",
    "mark_alert_failed": "padformer_edge.store.queue",
    "mark_alert_sent": "padformer_edge.store.queue",
    "requeue_interrupted": "padformer_edge.store.queue",
    "skip": "padformer_edge.store.queue",
    "backup": "padformer_edge.store.schema",
    "current_revision": "padformer_edge.store.schema",
    "head_revision": "padformer_edge.store.schema",
    "migrate_on_start": "padformer_edge.store.schema",
    "open_checked": "padformer_edge.store.schema",
    "require_head": "padformer_edge.store.schema",
    "upgrade": "padformer_edge.store.schema",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
