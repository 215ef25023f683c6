"""The page over a database two lines share: the history filters by line, /metrics labels
every series with its line, and the banner judges each line's own heartbeat."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta

from prometheus_client.parser import text_string_to_metric_families

from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import record_heartbeat
from padformer_edge.store.lines import default_line, with_line
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.web.server import WebServer
from tests.web.client import request
from tests.web.site import THRESHOLD, Site

OTHER = "press-2"


def _other_line(site: Site, count: int, first: int = 0) -> list[int]:
    """``count`` inspected rows of line ``press-2`` on camera ``cam-a`` (a camera name the
    site's own line uses too): their ids. ``first``: the number of the first file (the
    same number twice is the same file, which is not queued again)."""
    engine = with_line(open_engine(site.db), OTHER)
    for n in range(first, first + count):
        enqueue(engine, camera="cam-a", product="bolt", source_path=f"/press2/{n}.png",
                sha256=f"{n:064x}", size_bytes=1, discovered_at=datetime.now(UTC))  # fmt: skip
    ids = []
    for row in claim_batch(engine, count):
        complete(engine, row.id, DetectionOutcome(0.1, THRESHOLD, None, "0" * 64, 12.0))
        ids.append(row.id)
    engine.dispose()
    return ids


def _beat(site: Site, line: str, age_s: float) -> None:
    engine = with_line(open_engine(site.db), line)
    now = datetime.now(UTC)
    record_heartbeat(engine, interval_s=5.0, started_at=now - timedelta(hours=1), pid=7,
                     host="pc", status="ok", now=now - timedelta(seconds=age_s))  # fmt: skip
    engine.dispose()


def test_the_history_filters_by_line(server: WebServer, site: Site) -> None:
    theirs = _other_line(site, 3)
    rows = json.loads(request(server.url, f"/history.json?line={OTHER}").body)
    assert sorted(r["id"] for r in rows) == sorted(theirs)
    assert {r["line"] for r in rows} == {OTHER}
    mine = json.loads(request(server.url, f"/history.json?line={default_line()}&limit=500").body)
    assert mine and not {r["id"] for r in mine} & set(theirs)
    page = request(server.url, "/history", headers={"Accept": "text/html"}).text
    assert f'<option value="{OTHER}"' in page and f'<option value="{default_line()}"' in page


def test_metrics_label_every_series_with_its_line(server: WebServer, site: Site) -> None:
    request(server.url, "/metrics")  # the counters start with the first scrape
    _other_line(site, 2)
    _beat(site, OTHER, age_s=3.0)
    time.sleep(1.1)  # the collector reads the store at most once a second
    families = {f.name: f for f in text_string_to_metric_families(
        request(server.url, "/metrics").text)}  # fmt: skip
    done = {
        (s.labels["line"], s.labels["camera"]): s.value
        for s in families["padformer_inspections"].samples
        if s.name == "padformer_inspections_total" and s.labels["status"] == "done"
    }
    assert done.get((OTHER, "cam-a")) == 2  # one line's cam-a is not the other's
    assert done.get((default_line(), "cam-a"), 0) == 0
    depth = {(s.labels["line"], s.labels["status"]): s.value
             for s in families["padformer_queue_depth"].samples}  # fmt: skip
    assert depth[(OTHER, "pending")] == 0 and depth[(default_line(), "pending")] > 0
    ages = {s.labels["line"]: s.value
            for s in families["padformer_daemon_heartbeat_age_seconds"].samples}  # fmt: skip
    assert set(ages) == {OTHER} and 3.0 <= ages[OTHER] < 60.0


def test_the_banner_names_the_silent_line(server: WebServer, site: Site) -> None:
    _beat(site, "press-1", age_s=1.0)
    _beat(site, OTHER, age_s=1.0)
    state = json.loads(request(server.url, "/api/heartbeat").body)
    assert state["state"] == "alive" and "All 2 lines' daemons alive" in state["sentence"]
    _beat(site, OTHER, age_s=600.0)
    state = json.loads(request(server.url, "/api/heartbeat").body)
    assert state["state"] == "stale"
    assert re.match(rf"Line {OTHER}'s daemon silent: last heartbeat 10 min ago", state["sentence"])
