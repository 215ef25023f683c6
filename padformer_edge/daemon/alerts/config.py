"""The ``alerts:`` section of the daemon config: sinks, cooldown and retry policy."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from padformer_edge.config import StrictModel

SINK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
URL = re.compile(r"https?://\S+")


class SinkConfig(StrictModel):
    """One named destination: ``type: webhook`` with ``url`` or ``type: command`` with ``argv``.

    One flat model rather than a tagged union so that a mistake is reported at the
    sink's own key and line, where the operator has to fix it.
    """

    type: Literal["webhook", "command"]
    url: str | None = Field(None, description="webhook: the http:// or https:// endpoint")
    headers: dict[str, str] = Field(default_factory=dict, description="webhook: extra headers")
    argv: list[str] | None = Field(None, description="command: program and its arguments")
    timeout_s: float = Field(10.0, gt=0, description="one attempt's limit")

    @model_validator(mode="after")
    def _fields_of_its_type(self) -> SinkConfig:
        if self.type == "webhook":
            if not self.url or not URL.fullmatch(self.url):
                raise ValueError("a webhook needs 'url' starting with http:// or https://")
            if self.argv is not None:
                raise ValueError("'argv' belongs to command sinks; remove it from this webhook")
        else:
            if not self.argv:
                raise ValueError("a command needs 'argv', a non-empty list: [program, args...]")
            if self.url is not None or self.headers:
                raise ValueError("'url' and 'headers' belong to webhooks; remove them here")
        return self


class AlertsConfig(StrictModel):
    """Where alerts go and how hard the dispatcher tries.

    The log sink is always on, so every alert is at least one JSON log line; ``sinks``
    adds named webhooks and commands. A failed delivery is retried after
    ``backoff_base_s`` doubling per attempt up to ``backoff_max_s``, each delay scaled by
    a random factor in [0.5, 1] so that line PCs sharing an endpoint do not retry in
    lock-step; after ``max_attempts`` failures the alert is ``dead``. ``cooldown_s`` holds
    back further notifications for the same camera, product and kind; results are stored
    regardless.
    """

    sinks: dict[str, SinkConfig] = Field(default_factory=dict)
    cooldown_s: float = Field(300.0, ge=0)
    max_attempts: int = Field(10, ge=1)
    backoff_base_s: float = Field(5.0, gt=0)
    backoff_max_s: float = Field(900.0, gt=0)
    poll_interval_s: float = Field(2.0, gt=0)

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
