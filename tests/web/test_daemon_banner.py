"""Health an operator can trust: every page, not only /health, shows this database's
daemon heartbeat and turns red when it is older than the stated multiple of its
interval, when no daemon ever beat, or when the database cannot be read."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import record_heartbeat
from padformer_edge.store.lines import default_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import WebServer, make_server
from tests.web.client import request
from tests.web.conftest import TOKEN
from tests.web.site import Site

HTML = {"Accept": "text/html"}
INTERVAL_S = 5.0


def _beat(db: str, age_s: float, status: str = "backlog 0") -> datetime:
    """Store a heartbeat ``age_s`` old now; its time, to measure the page's age against."""
    engine = open_engine(db)
    now = datetime.now(UTC)
    beat_at = now - timedelta(seconds=age_s)
    record_heartbeat(engine, interval_s=INTERVAL_S, started_at=now - timedelta(hours=1),
                     pid=4242, host="line-pc", status=status, now=beat_at)  # fmt: skip
    engine.dispose()
    return beat_at


def _banner(server: WebServer, path: str, status: int = 200) -> tuple[str, str]:
    """(class attribute, sentence) of the daemon banner on ``path``."""
    page = request(server.url, path, headers=HTML)
    assert page.status == status, (path, page.status)
    found = re.search(r'<div id="daemon-state" class="([^"]+)"[^>]*>([^<]+)</div>', page.text)
    assert found, f"no daemon banner on {path}"
    return found.group(1), found.group(2)


def _aged_banner(
    server: WebServer, path: str, beat_at: datetime, status: int = 200
) -> tuple[str, str, int]:
    """``_banner`` and the whole seconds it says the beat is old, checked against the age
    measured here just before and just after the request (the page rounds the age it
    read in between, and rounding keeps the order), whatever the request took."""
    before = (datetime.now(UTC) - beat_at).total_seconds()
    classes, sentence = _banner(server, path, status)
    after = (datetime.now(UTC) - beat_at).total_seconds()
    stated = re.search(r"heartbeat (\d+) s ago", sentence)
    assert stated, sentence
    age = int(stated.group(1))
    assert round(before) <= age <= round(after), (path, before, sentence, after)
    return classes, sentence, age


def test_a_stale_heartbeat_turns_every_page_red(server: WebServer, site: Site) -> None:
    beat_at = _beat(site.db, age_s=16.0)  # just over 3 x 5 s, and only older by each page
    pages = [("/", 200), ("/history", 200), (f"/inspections/{site.good[0]}", 200),
             ("/health", 200), ("/nope", 404)]  # fmt: skip
    for path, status in pages:
        classes, sentence, age = _aged_banner(server, path, beat_at, status)
        assert "red" in classes.split() and "daemon-stale" in classes, path
        assert sentence.startswith(f"Daemon silent: last heartbeat {age} s ago, more than 15 s")
    state = json.loads(request(server.url, "/api/heartbeat").body)
    assert state["state"] == "stale" and state["red"] is True and state["limit_s"] == 15.0


def test_a_fresh_heartbeat_is_calm(server: WebServer, site: Site) -> None:
    # two beats missed, inside 3 x 5 s with 4 s to spare for a slow request
    beat_at = _beat(site.db, age_s=11.0)
    classes, sentence, age = _aged_banner(server, "/history", beat_at)
    assert "red" not in classes.split() and "daemon-alive" in classes
    assert sentence == f"Daemon alive: heartbeat {age} s ago."
    health = request(server.url, "/health").text
    assert 'id="heartbeat-limit">15 s<' in health and "pid 4242 on line-pc" in health


def test_no_heartbeat_at_all_is_red_too(server: WebServer) -> None:
    classes, sentence = _banner(server, "/")
    assert "red" in classes.split() and "daemon-never" in classes
    assert "No daemon has written a heartbeat to this database" in sentence


def test_the_multiple_is_the_configured_one(serve: Callable[..., WebServer], site: Site) -> None:
    _beat(site.db, age_s=60.0)
    lenient = serve(stale_after_beats=20)  # 100 s
    classes, _ = _banner(lenient, "/history")
    assert "daemon-alive" in classes
    strict = serve(stale_after_beats=2)  # 10 s
    assert "daemon-stale" in _banner(strict, "/history")[0]


def test_each_page_shows_its_own_databases_daemon(
    serve: Callable[..., WebServer], site: Site, tmp_path: Path
) -> None:
    """Two lines on one PC: the heartbeat of line 1 never shows on line 2's page."""
    other = str(tmp_path / "line2.sqlite3")
    engine = open_engine(other)
    upgrade(engine)
    engine.dispose()
    _beat(site.db, age_s=1.0, status="line 1 backlog 0")
    line1 = serve()
    line2 = make_server(HttpConfig(port=0), other, []).start()
    try:
        assert "daemon-alive" in _banner(line1, "/")[0]
        assert "daemon-never" in _banner(line2, "/")[0]
        assert "line 1 backlog 0" not in request(line2.url, "/health").text
        assert "line 1 backlog 0" in request(line1.url, "/health").text
    finally:
        line2.stop()
        line2.app.close()


def test_the_login_form_reveals_nothing_of_the_daemon(token_server: WebServer, site: Site) -> None:
    _beat(site.db, age_s=1.0, status="backlog 7, last #12 cam-a")
    for reply in (request(token_server.url, "/history", headers=HTML),
                  request(token_server.url, "/login", headers=HTML)):  # fmt: skip
        assert 'action="/login"' in reply.text
        assert "daemon-state" not in reply.text and "backlog 7" not in reply.text
    assert request(token_server.url, "/api/heartbeat").status == 401
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    state = json.loads(request(token_server.url, "/api/heartbeat", headers=bearer).body)
    assert state["state"] == "alive"


def test_metrics_report_this_databases_heartbeat_age(server: WebServer, site: Site) -> None:
    assert "padformer_daemon_heartbeat_age_seconds" not in request(server.url, "/metrics").text
    beat_at = _beat(site.db, age_s=30.0)
    time.sleep(1.1)  # the collector reads the store at most once a second
    text = request(server.url, "/metrics").text
    oldest = (datetime.now(UTC) - beat_at).total_seconds()  # read no later than now
    line = default_line()  # what a beat written through an engine with no line says
    found = re.search(rf'^padformer_daemon_heartbeat_age_seconds{{line="{line}"}} (\S+)$', text,
                      re.M)  # fmt: skip
    assert found is not None, text
    assert 30.0 <= float(found.group(1)) <= oldest
