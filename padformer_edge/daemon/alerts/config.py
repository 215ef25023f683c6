"""The ``alerts:`` section of the daemon config: sinks, cooldown and retry policy."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from padformer_edge.config import StrictModel

SINK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
URL = re.compile(r"https?://\S+")


FIELDS_OF = {
    "webhook": {"url", "headers"},
    "command": {"argv"},
    "mqtt": {"host", "port", "topic", "username", "password", "tls"},
}


class SinkConfig(StrictModel):
    """One named destination: a ``webhook`` (``url``), a ``command`` (``argv``) or an
    ``mqtt`` broker (``host``, ``topic``).

    One flat model rather than a tagged union so that a mistake is reported at the
    sink's own key and line, where the operator has to fix it.
    """

    type: Literal["webhook", "command", "mqtt"] = Field(description="What kind of sink.")
    url: str | None = Field(None, description="webhook: the http:// or https:// endpoint")
    headers: dict[str, str] = Field(default_factory=dict, description="webhook: extra headers")
    argv: list[str] | None = Field(None, description="command: program and its arguments")
    host: str | None = Field(None, description="mqtt: broker host name or address")
    port: int | None = Field(None, ge=1, le=65535, description="mqtt: 1883, or 8883 with tls")
    topic: str | None = Field(None, description="mqtt: may use {camera}, {product}, {kind}")
    username: str | None = Field(None, description="mqtt: user name, optional")
    password: str | None = Field(None, description="mqtt: password, with username")
    tls: bool = Field(False, description="mqtt: connect with TLS")
    timeout_s: float = Field(10.0, gt=0, description="one attempt's limit")

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> SinkConfig:
        given = {name for name in self.model_fields_set if name not in ("type", "timeout_s")}
        if stray := sorted(given - FIELDS_OF[self.type]):
            raise ValueError(f"{', '.join(stray)} do not apply to a {self.type} sink; remove them")
        if self.type == "webhook" and not (self.url and URL.fullmatch(self.url)):
            raise ValueError("a webhook needs 'url' starting with http:// or https://")
        if self.type == "command" and not self.argv:
            raise ValueError("a command needs 'argv', a non-empty list: [program, args...]")
        if self.type == "mqtt":
            if not self.host or not self.topic:
                raise ValueError("an mqtt sink needs 'host' and 'topic'")
            try:
                self.topic.format(camera="c", product="p", kind="k")
            except (KeyError, IndexError, ValueError) as err:
                raise ValueError(
                    f"topic '{self.topic}' may only use {{camera}}, {{product}} and {{kind}}"
                ) from err
        return self


class AlertsConfig(StrictModel):
    """Where alerts go and how hard the dispatcher tries.

    The log sink is always on, so every alert is at least one JSON log line; ``sinks``
    adds named webhooks, commands and MQTT brokers. A failed delivery is retried after
    ``backoff_base_s`` doubling per attempt up to ``backoff_max_s``, each delay scaled by
    a random factor in [0.5, 1] so that line PCs sharing an endpoint do not retry in
    lock-step; after ``max_attempts`` failures the alert is ``dead``. ``cooldown_s`` holds
    back further notifications for the same camera, product and kind; results are stored
    regardless.
    """

    sinks: dict[str, SinkConfig] = Field(
        default_factory=dict, description="Named sinks besides the log, which is always on."
    )
    cooldown_s: float = Field(
        300.0, ge=0, description="Per camera, product and kind; results are stored regardless."
    )
    max_attempts: int = Field(10, ge=1, description="Failed deliveries before an alert is dead.")
    backoff_base_s: float = Field(
        5.0, gt=0, description="First retry delay; it doubles per failure."
    )
    backoff_max_s: float = Field(900.0, gt=0, description="Longest retry delay.")
    poll_interval_s: float = Field(
        2.0, gt=0, description="Seconds between looks at the outbox when not woken."
    )

    @field_validator("sinks")
    @classmethod
    def _names_fit_the_outbox(cls, sinks: dict[str, SinkConfig]) -> dict[str, SinkConfig]:
        for name in sinks:
            if name == "log" or not SINK_NAME.fullmatch(name):
                raise ValueError(
                    f"sink name '{name}' must be 1-64 letters, digits, '.', '_' or '-' "
                    "and not 'log' (the log sink is always on)"
                )
        return sinks

    @model_validator(mode="after")
    def _backoff_range(self) -> AlertsConfig:
        if self.backoff_max_s < self.backoff_base_s:
            raise ValueError("backoff_max_s must be at least backoff_base_s")
        return self

    @property
    def sink_names(self) -> list[str]:
        """Every sink an alert is queued for: the log first, then the configured ones."""
        return ["log", *self.sinks]
