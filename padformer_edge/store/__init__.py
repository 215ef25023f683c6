"""The inspection history: one SQLite file by default, PostgreSQL by URL.

``models`` holds the tables, ``engine`` the connection set-up, ``schema`` the Alembic
migrations and backups, ``queue`` the daemon's write path and ``history`` the reads the
CLI offers. The names below are the whole public surface.
"""

from padformer_edge.store.engine import open_engine, resolve_url, state_dir
from padformer_edge.store.heartbeat import Heartbeat, read_heartbeat, record_heartbeat
from padformer_edge.store.history import (
    Filters,
    GroupStats,
    PruneResult,
    export,
    get_inspection,
    list_inspections,
    prune,
    stats,
)
from padformer_edge.store.models import Alert, AlertState, DaemonHeartbeat, Inspection, Status
from padformer_edge.store.queue import (
    AlertRequest,
    DetectionOutcome,
    claim_batch,
    complete,
    due_alerts,
    enqueue,
    fail,
    mark_alert_failed,
    mark_alert_sent,
    requeue_interrupted,
    skip,
)
from padformer_edge.store.schema import (
    backup,
    current_revision,
    head_revision,
    migrate_on_start,
    open_checked,
    require_head,
    upgrade,
)

__all__ = [
    "Alert",
    "AlertRequest",
    "AlertState",
    "DaemonHeartbeat",
    "DetectionOutcome",
    "Filters",
    "GroupStats",
    "Heartbeat",
    "Inspection",
    "PruneResult",
    "Status",
    "backup",
    "claim_batch",
    "complete",
    "current_revision",
    "due_alerts",
    "enqueue",
    "export",
    "fail",
    "get_inspection",
    "head_revision",
    "list_inspections",
    "mark_alert_failed",
    "mark_alert_sent",
    "migrate_on_start",
    "open_checked",
    "open_engine",
    "prune",
    "read_heartbeat",
    "record_heartbeat",
    "requeue_interrupted",
    "require_head",
    "resolve_url",
    "skip",
    "state_dir",
    "stats",
    "upgrade",
]
