"""From the ``alerts:`` config section to live sink objects, keyed by the name alert rows carry."""

from __future__ import annotations

from padformer_edge.daemon.alerts.config import AlertsConfig, SinkConfig
from padformer_edge.daemon.alerts.contract import Sink
from padformer_edge.daemon.alerts.sinks import CommandSink, LogSink, WebhookSink


def build_sink(config: SinkConfig) -> Sink:
    # The schema guarantees the fields each type needs; the asserts tell type checkers.
    if config.type == "webhook":
        assert config.url is not None
        return WebhookSink(config.url, headers=config.headers, timeout_s=config.timeout_s)
    if config.type == "mqtt":
        from padformer_edge.daemon.alerts.mqtt import MqttSink  # optional dependency

        assert config.host is not None and config.topic is not None
        return MqttSink(
            config.host, config.port or (8883 if config.tls else 1883), config.topic,
            username=config.username, password=config.password, tls=config.tls,
            timeout_s=config.timeout_s,
        )  # fmt: skip
    assert config.argv is not None
    return CommandSink(config.argv, timeout_s=config.timeout_s)


def build_sinks(config: AlertsConfig) -> dict[str, Sink]:
    """Every configured sink by the name alert rows carry, the log sink included."""
    return {"log": LogSink(), **{name: build_sink(c) for name, c in config.sinks.items()}}
