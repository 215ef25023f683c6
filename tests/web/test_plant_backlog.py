"""A line database that forwards to a plant shows what it still owes: a sentence in the
daemon banner and ``padformer_plant_backlog{line}`` on /metrics; one that forwards
nothing shows neither."""

from __future__ import annotations

import re
import time

import pytest

from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import default_line
from padformer_edge.store.models import ReviewVerdict
from padformer_edge.store.outbox import acknowledge, enable_forwarding, take
from padformer_edge.store.reviews import save_review
from padformer_edge.web.server import WebServer
from tests.web.client import request
from tests.web.site import Site

HTML = {"Accept": "text/html"}


def _banner(server: WebServer) -> str:
    page = request(server.url, "/history", headers=HTML)
    found = re.search(r'<div id="daemon-state" class="[^"]+"[^>]*>([^<]+)</div>', page.text)
    assert found, page.text
    return found.group(1)


def _plant_gauge(server: WebServer) -> str | None:
    time.sleep(1.1)  # the collector reads the store at most once a second
    text = request(server.url, "/metrics").text
    found = re.search(rf'^padformer_plant_backlog{{line="{default_line()}"}} (\S+)$', text, re.M)
    return found.group(1) if found else None


# A line's outbox is in its SQLite file: the database fixture's SQLite case only.
@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_the_plant_backlog_is_on_the_banner_and_metrics(server: WebServer, site: Site) -> None:
    assert "plant" not in _banner(server)
    assert _plant_gauge(server) is None
    engine = open_engine(site.db)
    enable_forwarding(engine, "postgresql://plant")
    save_review(engine, site.good[0], ReviewVerdict.false_alarm, reviewer="ana")
    # the review and its history entry
    assert f"Changes waiting for the plant database: 2 of line {default_line()}." in _banner(
        server
    )
    assert _plant_gauge(server) == "2.0"
    acknowledge(engine, take(engine, 10).outbox_ids)
    engine.dispose()
    assert "plant" not in _banner(server)
    assert _plant_gauge(server) == "0.0"
