"""Alerts: which to raise with a result, and delivering them from the store's outbox.

The worker calls ``plan_alerts`` (with one ``Cooldown`` it keeps for its lifetime) and
passes the requests to ``store.complete``; the daemon runs one ``AlertDispatcher``.
``AlertsConfig`` is the ``alerts:`` section of the daemon config.
"""

from padformer_edge.daemon.alerts.config import AlertsConfig, SinkConfig
from padformer_edge.daemon.alerts.contract import DeliveryFailed, Sink
from padformer_edge.daemon.alerts.dispatcher import AlertDispatcher, alert_body
from padformer_edge.daemon.alerts.factory import build_sinks
from padformer_edge.daemon.alerts.outbox import list_alerts, retry_alerts
from padformer_edge.daemon.alerts.planning import AlertKind, Cooldown, plan_alerts
from padformer_edge.daemon.alerts.sinks import CommandSink, LogSink, WebhookSink

__all__ = [
    "AlertDispatcher",
    "AlertKind",
    "AlertsConfig",
    "CommandSink",
    "Cooldown",
    "DeliveryFailed",
    "LogSink",
    "Sink",
    "SinkConfig",
    "WebhookSink",
    "alert_body",
    "build_sinks",
    "list_alerts",
    "plan_alerts",
    "retry_alerts",
]
