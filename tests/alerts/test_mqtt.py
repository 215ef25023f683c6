"""The MQTT sink against a real mosquitto broker on 127.0.0.1, and a broker that never acks.

The broker is the one named by ``PADFORMER_EDGE_TEST_MQTT`` (host:port; ``.ci/run``
starts it), else a mosquitto this module starts on a free port. Without either the
broker tests skip locally and fail in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.dispatcher import AlertDispatcher
from padformer_edge.daemon.alerts.outbox import list_alerts
from padformer_edge.daemon.alerts.planning import Cooldown
from tests.services import import_or_missing, service_missing

from .conftest import store_result, wait_until

paho = import_or_missing("paho.mqtt.client", "paho-mqtt (the mqtt extra) is missing")
BROKER_ENV = "PADFORMER_EDGE_TEST_MQTT"
MOSQUITTO = shutil.which("mosquitto") or shutil.which("mosquitto", path="/usr/sbin:/usr/bin")
FAST = {"backoff_base_s": 0.05, "backoff_max_s": 0.2, "poll_interval_s": 0.05, "cooldown_s": 0}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int) -> None:
    def accepting() -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
        except OSError:
            return False
        return True

    wait_until(accepting, f"a listener on port {port}")


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[int]:
    """The port of a running broker on 127.0.0.1."""
    running = os.environ.get(BROKER_ENV)
    if running:
        host, _, port = running.rpartition(":")
        if host not in ("127.0.0.1", "localhost") or not port.isdigit():
            pytest.fail(f"{BROKER_ENV}={running!r} must be 127.0.0.1:PORT")
        wait_for_port(int(port))
        yield int(port)
        return
    if MOSQUITTO is None:
        service_missing(
            f"mosquitto is not installed (apt-get install mosquitto) and {BROKER_ENV} "
            "names no running broker"
        )
    port = free_port()
    conf = tmp_path / "mosquitto.conf"
    conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    process = subprocess.Popen([MOSQUITTO, "-c", str(conf)], stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
        yield port
    finally:
        process.terminate()
        process.wait(10)


def mqtt_config(port: int, **extra: object) -> AlertsConfig:
    sink = {"type": "mqtt", "host": "127.0.0.1", "port": port,
            "topic": "plant/{camera}/{product}/{kind}", "timeout_s": 2}  # fmt: skip
    return AlertsConfig.model_validate({"sinks": {"mq": sink}, **FAST, **extra})


def test_alerts_reach_a_subscriber_on_a_real_broker(engine: Engine, broker: int) -> None:
    received: list[tuple[str, dict]] = []
    subscribed = threading.Event()
    listener = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="line-monitor")
    listener.on_connect = lambda c, *_: c.subscribe("plant/#", qos=1)
    listener.on_subscribe = lambda *_: subscribed.set()
    listener.on_message = lambda _c, _u, m: received.append((m.topic, json.loads(m.payload)))
    listener.connect("127.0.0.1", broker)
    listener.loop_start()
    try:
        assert subscribed.wait(10)
        config = mqtt_config(broker)
        for name in ("a.png", "b.png"):
            store_result(engine, config, Cooldown(0), name, camera="line2")
        AlertDispatcher(engine, config).drain_once()
        sent = {a["id"] for a in list_alerts(engine, sink="mq") if a["state"] == "sent"}
        assert len(sent) == 2
        wait_until(lambda: len(received) == 2, "both messages at the subscriber")
    finally:
        listener.disconnect()
        listener.loop_stop()
    assert {topic for topic, _ in received} == {"plant/line2/nut/anomaly"}
    assert {body["alert_id"] for _, body in received} == sent


def test_a_broker_that_never_acknowledges_leaves_the_alert_unsent(engine: Engine) -> None:
    """Accepts the connection (CONNACK) but swallows the PUBLISH: no PUBACK, no 'sent'."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def silent_broker() -> None:
        conn, _ = server.accept()
        conn.recv(4096)  # CONNECT
        conn.sendall(b"\x20\x02\x00\x00")  # CONNACK, accepted
        deadline = time.monotonic() + 10
        conn.settimeout(0.5)
        while time.monotonic() < deadline:
            try:
                if not conn.recv(4096):
                    break
            except TimeoutError:
                continue
        conn.close()

    thread = threading.Thread(target=silent_broker, daemon=True)
    thread.start()
    config = mqtt_config(port, max_attempts=3)
    config.sinks["mq"].timeout_s = 0.5
    store_result(engine, config, Cooldown(0), "a.png")
    AlertDispatcher(engine, config).drain_once()
    (alert,) = list_alerts(engine, sink="mq")
    assert (alert["state"], alert["attempts"]) == ("pending", 1)
    assert "did not acknowledge the message within 0.5 s" in alert["last_error"]
    thread.join(15)
    server.close()


def test_no_broker_listening_is_a_recorded_failure(engine: Engine) -> None:
    config = mqtt_config(free_port())
    store_result(engine, config, Cooldown(0), "a.png")
    AlertDispatcher(engine, config).drain_once()
    (alert,) = list_alerts(engine, sink="mq")
    assert alert["state"] == "pending" and alert["last_error"].startswith("cannot connect to")
