"""The MQTT sink: QoS 1, and an alert counts as sent only once the broker has acked it.

paho-mqtt is an optional extra (``pip install 'padformer-edge[mqtt]'``); a config naming
an MQTT sink without it installed is refused when the daemon starts, not at the first
defect. Each delivery opens its own short connection: alerts are rare, and a connection
that lives for months would need its own supervision for no gain.
"""

from __future__ import annotations

import threading
from typing import Any

from padformer_edge.daemon.alerts.contract import DeliveryFailed, encode_body
from padformer_edge.errors import UserError

try:
    import paho.mqtt.client as paho
except ModuleNotFoundError:  # the extra is not installed
    paho = None


class MqttSink:
    """Publishes each alert to ``topic`` (filled with camera, product and kind)."""

    def __init__(
        self,
        host: str,
        port: int,
        topic: str,
        *,
        username: str | None = None,
        password: str | None = None,
        tls: bool = False,
        timeout_s: float = 10.0,
    ) -> None:
        if paho is None:
            raise UserError(
                "an mqtt alert sink is configured but paho-mqtt is not installed; "
                "run pip install 'padformer-edge[mqtt]' or remove the sink."
            )
        self.host, self.port, self.topic = host, port, topic
        self.username, self.password, self.tls = username, password, tls
        self.timeout_s = timeout_s

    def deliver(self, alert_id: int, body: dict[str, Any]) -> None:
        topic = self.topic.format(
            camera=body.get("camera"), product=body.get("product"), kind=body.get("kind")
        )
        client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"padformer-{alert_id}")
        if self.username is not None:
            client.username_pw_set(self.username, self.password)
        if self.tls:
            client.tls_set()
        connected, refusal = threading.Event(), []

        def on_connect(_c: Any, _u: Any, _f: Any, reason: Any, _p: Any) -> None:
            if reason.is_failure:
                refusal.append(str(reason))
            connected.set()

        client.on_connect = on_connect
        where = f"mqtt://{self.host}:{self.port}"
        try:
            client.connect(self.host, self.port, keepalive=max(5, int(self.timeout_s * 2)))
        except OSError as err:
            raise DeliveryFailed(f"cannot connect to {where}: {err.strerror or err}") from err
        client.loop_start()
        try:
            if not connected.wait(self.timeout_s):
                raise DeliveryFailed(f"{where} did not answer the connection")
            if refusal:
                raise DeliveryFailed(f"{where} refused the connection: {refusal[0]}")
            message = client.publish(topic, encode_body(body), qos=1)
            try:
                message.wait_for_publish(self.timeout_s)
            except (RuntimeError, ValueError) as err:
                raise DeliveryFailed(f"{where} lost the message: {err}") from err
            if not message.is_published():
                raise DeliveryFailed(
                    f"{where} did not acknowledge the message within {self.timeout_s:g} s"
                )
        finally:
            client.disconnect()
            client.loop_stop()
