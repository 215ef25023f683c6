"""Deciding, at result time, which alert rows to queue with a result.

The worker calls ``plan_alerts`` before committing a result and hands the requests to
the store, so the result and its alerts land in one transaction. The cooldown lives
here rather than in the dispatcher: a suppressed notification never becomes a row, and
the next one that does carries how many were held back, so nothing is hidden from the
receiver and the outbox does not fill up with rows nobody will send.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.store.queue import AlertRequest


class AlertKind(enum.StrEnum):
    """Why an operator is told: a part looks defective, images were skipped unseen, a
    camera's scores drifted from its profile's calibration, or the GPU failed and the
    daemon moved a profile to the CPU."""

    anomaly = "anomaly"
    skipped = "skipped"
    drift = "drift"
    device = "device"


CooldownKey = tuple[str, str, str]


@dataclass
class Cooldown:
    """At most one notification per camera, product and kind every ``seconds``.

    The window is in memory: after a restart the first alert of each key goes out at
    once, which costs at most one extra notification per restart and never loses one.
    The clock is monotonic so that a wall-clock jump cannot mute a line for hours.
    """

    seconds: float
    clock: Callable[[], float] = time.monotonic
    _last: dict[CooldownKey, float] = field(default_factory=dict)
    _held: dict[CooldownKey, int] = field(default_factory=dict)

    def admit(self, key: CooldownKey) -> int | None:
        """``None`` when the key is cooling down, else how many were held back before it."""
        now = self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.seconds:
            self._held[key] = self._held.get(key, 0) + 1
            return None
        self._last[key] = now
        return self._held.pop(key, 0)

    def held(self, key: CooldownKey) -> int:
        """Notifications suppressed for ``key`` since its last one went out."""
        return self._held.get(key, 0)


def plan_alerts(
    config: AlertsConfig,
    *,
    cooldown: Cooldown,
    camera: str,
    product: str,
    score: float | None,
    threshold: float | None,
    reason: str,
    kind: AlertKind = AlertKind.anomaly,
    source_path: str | None = None,
    heatmap_path: str | None = None,
    extra: dict[str, Any] | None = None,
) -> list[AlertRequest]:
    """One request per sink (log first) for a notification, or none.

    It judges no score: a caller plans an ``anomaly`` for a result whose verdict says so
    (``store.queue.DetectionOutcome.is_anomaly``, decided once where the result is made),
    so the alert and the stored row cannot disagree. A cooled-down notification returns
    an empty list; the result row itself is stored as usual.
    """
    suppressed = cooldown.admit((camera, product, kind.value))
    if suppressed is None:
        return []
    payload = {
        "kind": kind.value,
        "camera": camera,
        "product": product,
        "score": score,
        "threshold": threshold,
        "reason": reason,
        "source_path": source_path,
        "heatmap_path": heatmap_path,
        "suppressed_before": suppressed,
        **(extra or {}),
    }
    return [AlertRequest(sink=name, payload=payload) for name in config.sink_names]


def drift_requests(
    config: AlertsConfig, *, camera: str, product: str, threshold: float, reason: str,
    extra: dict[str, Any],
) -> list[AlertRequest]:  # fmt: skip
    """One request per sink for a drift, with no cooldown: an open drift event already
    keeps its camera from raising another until someone acknowledges it."""
    payload = {
        "kind": AlertKind.drift.value,
        "camera": camera,
        "product": product,
        "score": None,
        "threshold": threshold,
        "reason": reason,
        "source_path": None,
        "heatmap_path": None,
        "suppressed_before": 0,
        **extra,
    }
    return [AlertRequest(sink=name, payload=payload) for name in config.sink_names]
