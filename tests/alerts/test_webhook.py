"""Webhook delivery against a real HTTP server on 127.0.0.1, through dispatcher restarts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import Engine

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.dispatcher import AlertDispatcher
from padformer_edge.daemon.alerts.outbox import list_alerts
from padformer_edge.daemon.alerts.planning import Cooldown
from padformer_edge.store.engine import open_engine
from padformer_edge.store.models import AlertState

from .conftest import WebhookReceiver, store_result, wait_until

FAST = {"backoff_base_s": 0.05, "backoff_max_s": 0.2, "poll_interval_s": 0.05}


def hook_alerts(engine: Engine) -> list[dict]:
    return list_alerts(engine, sink="hook", limit=1000)


def test_500_twice_then_200_delivers_each_alert_once_across_a_restart(
    sqlite_file: Path, engine: Engine, webhook: Callable[[int], WebhookReceiver]
) -> None:
    receiver = webhook(2)
    config = AlertsConfig.model_validate(
        {"sinks": {"hook": {"type": "webhook", "url": receiver.url}}, "cooldown_s": 0, **FAST}
    )
    cooldown = Cooldown(config.cooldown_s)
    inspections = [store_result(engine, config, cooldown, f"{i}.png", score=3.0 + i)[0]
                   for i in range(3)]  # fmt: skip
    ids = {str(a["id"]) for a in hook_alerts(engine)}
    assert len(ids) == 3

    first = AlertDispatcher(engine, config)
    first.start()
    wait_until(lambda: set(receiver.requests) == ids, "a first attempt at every alert")
    first.stop()
    assert not first.alive

    # A new process in effect: its own engine on the same file, a fresh dispatcher.
    reopened = open_engine(str(sqlite_file))
    second = AlertDispatcher(reopened, config)
    second.start()
    wait_until(lambda: all(a["state"] == "sent" for a in hook_alerts(reopened)), "every alert sent")
    second.stop()

    assert {key: len(bodies) for key, bodies in receiver.accepted.items()} == dict.fromkeys(ids, 1)
    assert dict(receiver.requests) == dict.fromkeys(ids, 3)
    for key, (body,) in receiver.accepted.items():
        assert body["alert_id"] == int(key) and body["attempt"] == 3
        assert body["inspection_id"] in inspections and body["kind"] == "anomaly"
        assert body["heatmap_path"] == f"/heatmaps/{body['inspection_id']}.png"
    assert all(h["Content-Type"] == "application/json" for h in receiver.headers)
    rows = hook_alerts(reopened)
    assert [(r["state"], r["attempts"]) for r in rows] == [("sent", 3)] * 3
    assert all(r["last_error"].startswith("HTTP 500") for r in rows)
    log_rows = list_alerts(reopened, sink="log")
    assert [r["state"] for r in log_rows] == ["sent"] * 3
    reopened.dispose()


def test_unreachable_endpoint_goes_dead_after_max_attempts(engine: Engine) -> None:
    # Port 9 (discard) has no listener here, so every attempt is refused at once.
    config = AlertsConfig.model_validate(
        {"sinks": {"hook": {"type": "webhook", "url": "http://127.0.0.1:9/x", "timeout_s": 2}},
         "max_attempts": 2, "cooldown_s": 0, **FAST}
    )  # fmt: skip
    store_result(engine, config, Cooldown(0), "a.png")
    dispatcher = AlertDispatcher(engine, config)
    dispatcher.start()
    wait_until(lambda: hook_alerts(engine)[0]["state"] == "dead", "the alert to go dead")
    dispatcher.stop()
    (dead,) = list_alerts(engine, state=AlertState.dead)
    assert dead["attempts"] == 2 and "cannot reach http://127.0.0.1:9/x" in dead["last_error"]


def test_alerts_for_a_sink_removed_from_the_config_go_dead_at_once(engine: Engine) -> None:
    old = AlertsConfig.model_validate(
        {"sinks": {"gone": {"type": "command", "argv": ["/bin/true"]}}, "cooldown_s": 0}
    )
    store_result(engine, old, Cooldown(0), "a.png")
    dispatcher = AlertDispatcher(engine, AlertsConfig(cooldown_s=0, **FAST))
    dispatcher.drain_once()
    states = {a["sink"]: (a["state"], a["attempts"], a["last_error"]) for a in
              list_alerts(engine)}  # fmt: skip
    assert states == {
        "log": ("sent", 1, None),
        "gone": ("dead", 1, "sink 'gone' is no longer configured"),
    }
