"""``watch`` hands what it opened to the daemon (issue 62, item 5): the folders, each
profile and its digest are resolved and read once, and the daemon sets no signal
handlers of its own over the ones ``watch`` set for the stop event it hands in."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import pytest

from padformer_edge.daemon import service
from padformer_edge.daemon.opened import open_line
from padformer_edge.daemon.settings import load_daemon_config
from tests.daemon.harness import make_site


def test_the_daemon_starts_on_what_watch_opened(
    tmp_path: Path, line_profile: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = make_site(tmp_path, profile=line_profile, threshold=0.5)
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(site.root / "state"))
    settings = load_daemon_config(site.config, [])
    opened = open_line(settings)
    assert set(opened.profiles) == {"bolt"} and opened.digests["bolt"] is not None
    again: list[str] = []

    def refuse(what: str):
        return lambda *args, **kwargs: again.append(what)

    monkeypatch.setattr(service, "open_line", refuse("open_line"))
    monkeypatch.setattr(service, "resolve_layout", refuse("resolve_layout"))
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    stop = threading.Event()
    daemon = service.Daemon(settings, stop=stop, opened=opened)
    assert daemon.layout is opened.layout
    stop.set()  # asked to stop at once: run returns before starting, handlers untouched
    assert daemon.run() == 0
    assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
    daemon.start()
    try:
        assert again == []  # nothing resolved or opened a second time
        [inspector] = {id(i): i for i in daemon.worker.inspectors.values()}.values()
        assert inspector.threshold == opened.profiles["bolt"][1] == 0.5
    finally:
        daemon.shutdown()
