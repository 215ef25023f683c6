"""The daemon's stop request: one event, set by SIGTERM or SIGINT and by the claim keeper.

``watch`` listens for the signals from the moment it holds its claims, before it imports
what runs the daemon and builds its detectors (seconds, more on a loaded machine). A
stop asked for in that phase (by systemd, or by the claim keeper finding the line held
by another daemon in the plant) is then taken up as soon as the daemon can act on it,
rather than by the signal's default action killing the process mid-import: exit 143
with the refusal's sentence only in the log, where the refusal is exit 2 with its
sentence on stderr in every other phase.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from padformer_edge.reporting.log import get_logger

log = get_logger("daemon")

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[threading.Event]:
    """Within the block SIGTERM and SIGINT set ``stop`` (the handlers before are put
    back after it). Call from the main thread, as ``signal.signal`` requires."""

    def request_stop(signum: int, _frame: object) -> None:
        log.info("daemon.signal", signal=signal.Signals(signum).name)
        stop.set()

    previous = {s: signal.signal(s, request_stop) for s in STOP_SIGNALS}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
