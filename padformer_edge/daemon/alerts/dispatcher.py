"""The thread that drains the alert outbox into the sinks.

Alerts are rows first and messages second: the worker commits them with the result,
and this thread delivers whatever is due, marking each sent or failed in its own short
transaction. A restart therefore resumes exactly where the last run stopped. A crash
between a sink's success and the commit can repeat one delivery, which is why every
delivery carries the alert id for the receiver to de-duplicate on.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine
from sqlalchemy.exc import SQLAlchemyError

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.contract import DeliveryFailed, Sink
from padformer_edge.daemon.alerts.factory import build_sinks
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.models import Alert
from padformer_edge.store.queue import due_alerts, mark_alert_failed, mark_alert_sent

log = get_logger("alerts")
BATCH = 100


def alert_body(alert: Alert) -> dict[str, Any]:
    """What a sink receives: the stored payload plus the ids a receiver needs."""
    return {
        **json.loads(alert.payload),
        "alert_id": alert.id,
        "inspection_id": alert.inspection_id,
        "sink": alert.sink,
        "created_at": alert.created_at.isoformat(),
        "attempt": alert.attempts + 1,
    }


class AlertDispatcher:
    """Delivers due alerts in a background thread until ``stop()``.

    ``stop()`` lets the delivery in progress finish (each is bounded by its sink's
    timeout) and records it, so a clean shutdown never leaves an alert half-handled.
    ``alive`` is for the daemon's watchdog: false once the thread has died or stopped.
    """

    def __init__(
        self, engine: Engine, config: AlertsConfig, *, sinks: Mapping[str, Sink] | None = None
    ) -> None:
        self.engine, self.config = engine, config
        self.sinks = dict(sinks) if sinks is not None else build_sinks(config)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._random = random.Random()

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the alert dispatcher was already started")
        self._thread = threading.Thread(target=self._run, name="alert-dispatcher", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def wake(self) -> None:
        """Look at the outbox now instead of at the next poll (the worker just queued)."""
        self._wake.set()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                busy = self.drain_once()
            except SQLAlchemyError as err:  # the database is back on the next poll, mostly
                log.error("alert outbox unreadable", error=str(err).splitlines()[0])
                busy = False
            if not busy:
                self._wake.wait(self.config.poll_interval_s)
                self._wake.clear()

    def drain_once(self) -> bool:
        """One pass over the due alerts; true when a full batch went out (more may wait).

        A sink that fails is not tried again in the same pass, so one endpoint that is
        down costs one timeout per pass, not one per queued alert.
        """
        due = due_alerts(self.engine, limit=BATCH)
        failing: set[str] = set()
        for alert in due:
            if self._stop.is_set():
                return False
            if alert.sink not in failing and not self._deliver(alert):
                failing.add(alert.sink)
        return len(due) == BATCH and not failing

    def _deliver(self, alert: Alert) -> bool:
        sink = self.sinks.get(alert.sink)
        if sink is None:
            # Taken out of the config while alerts were queued for it: nothing will ever
            # deliver them, so they go dead at once and show in 'alerts list'.
            mark_alert_failed(
                self.engine, alert.id, f"sink '{alert.sink}' is no longer configured",
                max_attempts=1,
            )  # fmt: skip
            log.error("alert dead", alert_id=alert.id, sink=alert.sink, error="unknown sink")
            return True
        try:
            sink.deliver(alert.id, alert_body(alert))
        except DeliveryFailed as err:
            self._record_failure(alert, str(err))
            return False
        except Exception as err:  # a sink bug must not kill the thread that serves all sinks
            self._record_failure(alert, f"{type(err).__name__}: {err}")
            return False
        mark_alert_sent(self.engine, alert.id)
        return True

    def _record_failure(self, alert: Alert, error: str) -> None:
        jitter = self._random.uniform(0.5, 1.0)
        updated = mark_alert_failed(
            self.engine,
            alert.id,
            error,
            max_attempts=self.config.max_attempts,
            base_delay_s=self.config.backoff_base_s * jitter,
            max_delay_s=self.config.backoff_max_s * jitter,
        )
        event = "alert dead" if updated.state.value == "dead" else "alert delivery failed"
        log.warning(
            event, alert_id=alert.id, sink=alert.sink, attempts=updated.attempts, error=error
        )
