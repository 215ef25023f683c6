"""A daemon's life under systemd: READY, watchdog pings, alerts through a flaky webhook,
SIGTERM with nothing left processing, and a restart that delivers each alert once; with
the polling observer, as on a network share."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.daemon.harness import DaemonProcess, make_site, rows, settled, wait_for, write_image
from tests.detect_images import product_image

IMAGES = 3


class FlakyWebhook:
    """127.0.0.1 endpoint answering 500 to its first ``failures`` requests, then 200."""

    def __init__(self, failures: int) -> None:
        self.failures, self.requests = failures, []  # (status, idempotency key, body)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                status = 500 if len(receiver.requests) < receiver.failures else 200
                receiver.requests.append((status, self.headers["Idempotency-Key"], body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self) -> list[str]:
        return [key for status, key, _ in self.requests if status == 200]


def _heard(sock: socket.socket, messages: list[str], needle: str) -> Callable[[], bool]:
    """A wait_for condition: read what arrived, True once a message contains ``needle``."""

    def check() -> bool:
        try:
            while True:
                messages.append(sock.recv(4096).decode())
        except BlockingIOError:
            pass
        return any(needle in m for m in messages)

    return check


def test_notify_sigterm_and_one_webhook_delivery_per_alert_across_a_restart(
    tmp_path: Path,
) -> None:
    hook = FlakyWebhook(failures=2)
    alerts = {
        "sinks": {"hook": {"type": "webhook", "url": hook.url}},
        "cooldown_s": 0,
        "backoff_base_s": 0.5,
        "backoff_max_s": 1.0,
        "poll_interval_s": 0.1,
    }
    # Every image is anomalous; the polling observer (network shares) finds the files.
    polling = {"polling": True, "poll_interval_s": 0.5}
    site = make_site(tmp_path, threshold=0.0, alerts=alerts, intake=polling)
    messages: list[str] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(tmp_path / "notify.sock"))
        sock.setblocking(False)
        env = {"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": "1000000"}
        with DaemonProcess(site, env=env) as daemon:
            wait_for(_heard(sock, messages, "READY=1"), 60, daemon, "READY=1")
            for i in range(IMAGES):
                write_image(site.cameras["cam0"] / f"{i}.png", product_image(48, 64, i))
            wait_for(_heard(sock, messages, "WATCHDOG=1"), 30, daemon, "WATCHDOG=1")
            wait_for(lambda: len(hook.requests) >= 1, 60, daemon, "a first webhook attempt")
            assert daemon.terminate() == 0
            assert _heard(sock, messages, "STOPPING=1")()
    ready = next(m for m in messages if "READY=1" in m)
    assert "STATUS=backlog" in ready
    assert not [r for r in rows(site.database) if r["status"] == "processing"]

    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        wait_for(settled(site.database, IMAGES), 60, daemon, "every image inspected")
        wait_for(lambda: len(hook.delivered()) >= IMAGES, 60, daemon, "every alert delivered")
        assert daemon.terminate() == 0
    hook.server.shutdown()
    assert sorted(hook.delivered()) == sorted(set(hook.delivered()))  # once per alert id
    assert [status for status, _, _ in hook.requests[:2]] == [500, 500]
    inspected = {r["id"] for r in rows(site.database)}
    assert {body["inspection_id"] for _, _, body in hook.requests} == inspected
