"""What every alert sink promises, in a module of its own so sinks can import it freely.

A sink makes exactly one bounded delivery attempt per call and either returns or raises
``DeliveryFailed`` with a one-line reason, which the dispatcher stores as the alert
row's ``last_error``; retrying is the dispatcher's job. Keeping this contract apart from
the concrete sinks lets an optional sink (MQTT) depend on it without the sinks module
and the optional one importing each other.
"""

from __future__ import annotations

import json
from typing import Any, Protocol


class DeliveryFailed(Exception):
    """One delivery attempt did not succeed; ``str()`` says why in one line."""


class Sink(Protocol):
    def deliver(self, alert_id: int, body: dict[str, Any]) -> None: ...


def encode_body(body: dict[str, Any]) -> bytes:
    """The bytes every sink sends: JSON with sorted keys, so receivers see one form."""
    return json.dumps(body, sort_keys=True).encode()
