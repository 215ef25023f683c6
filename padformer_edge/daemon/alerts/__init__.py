"""Alerts: which to raise with a result, and delivering them from the store's outbox.

The worker calls ``plan_alerts`` (with one ``Cooldown`` it keeps for its lifetime) and
passes the requests to ``store.complete``; the daemon runs one ``AlertDispatcher``.
``AlertsConfig`` is the ``alerts:`` section of the daemon config.

Names resolve lazily (PEP 562): the daemon config's schema (``config``) is read by
every command that takes ``--config``, and must not import the store and its
SQLAlchemy, which delivering alerts needs.
"""

from __future__ import annotations

from padformer_edge.lazy import lazy_exports

_EXPORTS = {
    "AlertsConfig": "padformer_edge.daemon.alerts.config",
    "SinkConfig": "padformer_edge.daemon.alerts.config",
    "DeliveryFailed": "padformer_edge.daemon.alerts.contract",
    "Sink": "padformer_edge.daemon.alerts.contract",
    "AlertDispatcher": "padformer_edge.daemon.alerts.dispatcher",
    "alert_body": "padformer_edge.daemon.alerts.dispatcher",
    "build_sinks": "padformer_edge.daemon.alerts.factory",
    "list_alerts": "padformer_edge.daemon.alerts.outbox",
    "retry_alerts": "padformer_edge.daemon.alerts.outbox",
    "AlertKind": "padformer_edge.daemon.alerts.planning",
    "Cooldown": "padformer_edge.daemon.alerts.planning",
    "plan_alerts": "padformer_edge.daemon.alerts.planning",
    "CommandSink": "padformer_edge.daemon.alerts.sinks",
    "LogSink": "padformer_edge.daemon.alerts.sinks",
    "WebhookSink": "padformer_edge.daemon.alerts.sinks",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
