"""The daemon speaks the systemd notify protocol and stops cleanly on SIGTERM."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.daemon.harness import DaemonProcess, make_site, rows, wait_for, write_image
from tests.detect_images import product_image


def _heard(sock: socket.socket, messages: list[str], needle: str):
    """A wait_for condition: read what arrived, True once a message contains ``needle``."""

    def check() -> bool:
        try:
            while True:
                messages.append(sock.recv(4096).decode())
        except (TimeoutError, BlockingIOError):
            pass
        return any(needle in m for m in messages)

    return check


def test_ready_watchdog_and_clean_sigterm_with_no_row_left_processing(tmp_path: Path) -> None:
    site = make_site(tmp_path)
    address = tmp_path / "notify.sock"
    messages: list[str] = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(str(address))
        sock.setblocking(False)
        env = {"NOTIFY_SOCKET": str(address), "WATCHDOG_USEC": "1000000"}
        with DaemonProcess(site, env=env) as daemon:
            wait_for(_heard(sock, messages, "READY=1"), 60, daemon, "READY=1")
            for i in range(12):
                write_image(site.cameras["cam0"] / f"{i}.png", product_image(48, 64, i))
            wait_for(_heard(sock, messages, "WATCHDOG=1"), 30, daemon, "WATCHDOG=1")
            wait_for(lambda: len(rows(site.database)) >= 1, 30, daemon, "work in flight")
            assert daemon.terminate() == 0
            assert _heard(sock, messages, "STOPPING=1")()
    ready = next(m for m in messages if "READY=1" in m)
    assert "STATUS=backlog" in ready
    assert not [r for r in rows(site.database) if r["status"] == "processing"]
