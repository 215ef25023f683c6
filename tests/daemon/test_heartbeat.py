"""A real daemon beats into the database it writes, and a page over that database turns
red within the stated time once the daemon is killed (SIGKILL: no goodbye written)."""

from __future__ import annotations

import json
import re
import socket
import time
from pathlib import Path

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import read_heartbeat
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import make_server
from tests.daemon.harness import DaemonProcess, make_site, wait_for
from tests.web.client import request

STALE_AFTER_BEATS = 1.5  # the smallest the config allows, so the test waits least


def test_the_daemon_beats_into_its_database_and_the_page_turns_red_when_killed(
    tmp_path: Path,
) -> None:
    site = make_site(tmp_path)
    config = HttpConfig(port=0, stale_after_beats=STALE_AFTER_BEATS)
    with DaemonProcess(site) as daemon:
        daemon.wait_ready(300)  # torch imports on a busy machine
        reader = open_engine(str(site.database), read_only=True)
        try:
            beat = read_heartbeat(reader)
            assert beat is not None and beat.pid == daemon.process.pid
            assert beat.host == socket.gethostname() and beat.status.startswith("backlog 0")
            assert beat.age_s < 2 * beat.interval_s
        finally:
            reader.dispose()
        server = make_server(config, str(site.database), []).start()
        try:
            state = json.loads(request(server.url, "/api/heartbeat").body)
            assert state["state"] == "alive"
            limit = state["limit_s"]
            assert limit == STALE_AFTER_BEATS * beat.interval_s
            daemon.kill()
            killed = time.monotonic()

            def red() -> bool:
                return json.loads(request(server.url, "/api/heartbeat").body)["red"]

            wait_for(red, limit + beat.interval_s + 10, None, "the page to turn red")
            # Stale at most one interval after the limit (the last beat may have just
            # preceded the kill), and not before the limit had passed since some beat.
            assert time.monotonic() - killed <= limit + beat.interval_s + 2
            page = request(server.url, "/history", headers={"Accept": "text/html"}).text
            banner = re.search(r'<div id="daemon-state" class="([^"]+)"', page)
            assert banner and "daemon-stale" in banner.group(1) and "red" in banner.group(1)
        finally:
            server.stop()
            server.app.close()
