"""Where an alert goes: the log, an HTTP endpoint, or a local program.

Each class keeps the contract of ``contract.py``: one attempt per call, bounded by a
timeout, ``DeliveryFailed`` with a one-line reason when it did not get through. The MQTT
sink lives in ``mqtt.py`` (optional dependency); ``factory.py`` builds them from config.
"""

from __future__ import annotations

import os
import subprocess
import urllib.error
import urllib.request
from typing import Any

from padformer_edge import __version__
from padformer_edge.daemon.alerts.contract import DeliveryFailed, encode_body
from padformer_edge.reporting.log import get_logger

log = get_logger("alerts")


class LogSink:
    """Always on: every alert is one WARNING line in the daemon's JSON log."""

    def deliver(self, alert_id: int, body: dict[str, Any]) -> None:
        log.warning("alert", **{k: v for k, v in body.items() if k != "event"})


class WebhookSink:
    """A JSON POST; any 2xx is success. ``Idempotency-Key`` is the alert id, so the
    receiver can drop the repeat that follows a crash between its 200 and our commit."""

    def __init__(self, url: str, *, headers: dict[str, str], timeout_s: float) -> None:
        self.url, self.headers, self.timeout_s = url, headers, timeout_s

    def deliver(self, alert_id: int, body: dict[str, Any]) -> None:
        headers = {
            **self.headers,
            "Content-Type": "application/json",
            "Idempotency-Key": str(alert_id),
            "User-Agent": f"padformer-edge/{__version__}",
        }
        request = urllib.request.Request(
            self.url, data=encode_body(body), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as err:
            raise DeliveryFailed(f"HTTP {err.code} {err.reason} from {self.url}") from err
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise DeliveryFailed(f"cannot reach {self.url}: {reason}") from err


class CommandSink:
    """Runs argv (no shell, so nothing in an alert can be interpreted as a command).

    The alert is JSON on stdin and its id is in ``PADFORMER_EDGE_ALERT_ID``; exit 0 is
    success, anything else is recorded with the end of stderr.
    """

    def __init__(self, argv: list[str], *, timeout_s: float) -> None:
        self.argv, self.timeout_s = argv, timeout_s

    def deliver(self, alert_id: int, body: dict[str, Any]) -> None:
        env = {**os.environ, "PADFORMER_EDGE_ALERT_ID": str(alert_id)}
        try:
            done = subprocess.run(
                self.argv,
                input=encode_body(body),
                capture_output=True,
                timeout=self.timeout_s,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as err:
            raise DeliveryFailed(f"{self.argv[0]} was killed after {self.timeout_s:g} s") from err
        except OSError as err:
            raise DeliveryFailed(f"cannot run {self.argv[0]}: {err.strerror}") from err
        if done.returncode != 0:
            tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise DeliveryFailed(
                f"{self.argv[0]} exited with code {done.returncode}"
                + (f": {tail[0][:200]}" if tail[0] else "")
            )
        log.debug("alert command done", alert_id=alert_id, exit_code=done.returncode)
