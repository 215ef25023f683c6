"""The systemd notification protocol, spoken directly instead of through a library.

The protocol is one datagram of ``KEY=VALUE`` lines to the Unix socket named by
``NOTIFY_SOCKET``; a leading ``@`` means Linux's abstract namespace (a NUL byte). Outside
systemd the variable is unset and every call is a no-op, so the daemon runs the same in a
terminal, in tests and under the service manager.
"""

from __future__ import annotations

import os
import socket


class Notifier:
    """Sends state lines to the service manager; silent when there is none."""

    def __init__(self, address: str | None = None) -> None:
        address = address if address is not None else os.environ.get("NOTIFY_SOCKET")
        self.address = "\0" + address[1:] if address and address.startswith("@") else address

    @property
    def enabled(self) -> bool:
        return bool(self.address)

    def send(self, **fields: str | int) -> bool:
        """Send ``KEY=VALUE`` lines (``ready=1`` becomes ``READY=1``); False if undelivered.

        A lost notification must never stop inspection, so socket errors are swallowed:
        the watchdog then restarts a daemon that truly cannot reach systemd.
        """
        if not self.address:
            return False
        lines = "\n".join(f"{key.upper()}={value}" for key, value in fields.items())
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
                sock.sendto(lines.encode(), self.address)
        except OSError:
            return False
        return True

    def ready(self, status: str) -> bool:
        return self.send(ready=1, status=status)

    def status(self, status: str) -> bool:
        return self.send(status=status)

    def watchdog(self) -> bool:
        return self.send(watchdog=1)

    def stopping(self) -> bool:
        return self.send(stopping=1)


def watchdog_interval_s() -> float | None:
    """Half of ``WatchdogSec`` (systemd's recommendation), or None without a watchdog."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return max(int(usec) / 2e6, 0.05)
    except ValueError:
        return None
