"""A line forwarding to the plant's PostgreSQL (a server this test owns): the daemon as a
subprocess, the plant database stopped mid-burst and started again, a SIGKILL while the
backlog drains. Every file once in the plant, every alert once, sent by the line itself
while the plant was away."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from padformer_edge.store.engine import resolve_url
from tests.daemon.harness import DaemonProcess, Site, make_site, settled, wait_for, write_image
from tests.detect_images import product_image
from tests.pg_cluster import Cluster, own_cluster

LINE = "press-1"


class Webhook:
    """127.0.0.1 endpoint counting accepted deliveries per alert id."""

    def __init__(self) -> None:
        self.received: Counter[int] = Counter()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.received[body["alert_id"]] += 1
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alerts"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with own_cluster() as owned:
        yield owned


@pytest.fixture
def hook() -> Iterator[Webhook]:
    receiver = Webhook()
    yield receiver
    receiver.server.shutdown()


def plant_site(tmp_path: Path, cluster: Cluster, hook: Webhook) -> Site:
    """Every image anomalous (threshold 0), so every result raises a webhook alert."""
    return make_site(
        tmp_path,
        threshold=0.0,
        line=LINE,
        plant_database=cluster.url,
        alerts={"sinks": {"hook": {"type": "webhook", "url": hook.url}}, "cooldown_s": 0},
    )


def local(site: Site, query: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{site.database}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(query).fetchall()
    except sqlite3.OperationalError:
        return []  # not migrated yet
    finally:
        conn.close()


def plant(cluster: Cluster, query: str) -> list[tuple]:
    engine = create_engine(resolve_url(cluster.url))
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.execute(text(query)).all()]
    except Exception:  # not migrated yet, or stopped: nothing readable there
        return []
    finally:
        engine.dispose()


def backlog(site: Site) -> int:
    found = local(site, "SELECT count(*) FROM plant_outbox")
    return int(found[0][0]) if found else -1


def alerts_sent(site: Site, expected: int) -> bool:
    states = local(site, "SELECT state FROM alerts WHERE sink = 'hook'")
    return len(states) >= expected and all(state == "sent" for (state,) in states)


FILE_QUERY = "SELECT line, source_path, sha256, status, score FROM inspections"
ALERT_QUERY = (
    "SELECT i.source_path, a.sink, a.payload, a.state FROM alerts a "
    "JOIN inspections i ON i.id = a.inspection_id"
)


def assert_plant_equals_line(site: Site, cluster: Cluster, files: int, hook: Webhook) -> None:
    """Every file once in the plant as the line has it; every alert once, as sent; every
    webhook alert delivered once by the line."""
    line_files, plant_files = local(site, FILE_QUERY), plant(cluster, FILE_QUERY)
    assert len(line_files) == files
    assert sorted(plant_files) == sorted(line_files)
    assert {row[0] for row in plant_files} == {LINE}
    line_alerts, plant_alerts = local(site, ALERT_QUERY), plant(cluster, ALERT_QUERY)
    assert len([a for a in line_alerts if a[1] == "hook"]) == files
    assert sorted(plant_alerts) == sorted(line_alerts)
    assert Counter(plant_alerts).most_common(1)[0][1] == 1
    hook_ids = {alert_id for (alert_id,) in local(site, "SELECT id FROM alerts WHERE sink='hook'")}
    assert set(hook.received) == hook_ids


def write_burst(site: Site, start: int, count: int) -> list[Path]:
    camera = site.cameras["cam0"]
    return [
        write_image(camera / f"{i:03d}.png", product_image(48, 64, i))
        for i in range(start, start + count)
    ]


def test_plant_cut_away_mid_burst_loses_and_repeats_nothing(
    tmp_path: Path, cluster: Cluster, hook: Webhook
) -> None:
    site = plant_site(tmp_path, cluster, hook)
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        write_burst(site, 0, 6)
        wait_for(lambda: len(plant(cluster, FILE_QUERY)) >= 1, 120, daemon, "a first forward")
        cluster.stop()
        write_burst(site, 6, 10)
        # the line inspects on and sends its own alerts with the plant away
        wait_for(settled(site.database, 16), 180, daemon, "every file inspected")
        wait_for(lambda: alerts_sent(site, 16), 60, daemon, "every alert sent by the line")
        assert backlog(site) > 0
        wait_for(
            lambda: any(
                "plant database unreachable" in status and "waiting" in status
                for (status,) in local(site, "SELECT status FROM daemon_heartbeat")
            ),
            60,
            daemon,
            "the heartbeat reporting the plant away and the backlog",
        )
        assert any(e.get("event") == "plant.unreachable" for e in daemon.events())
        cluster.start()
        wait_for(lambda: backlog(site) == 0, 120, daemon, "the backlog drained")
        assert daemon.terminate() == 0
    assert any(e.get("event") == "plant.reachable" for e in daemon.events())
    assert_plant_equals_line(site, cluster, 16, hook)
    beats = plant(cluster, "SELECT line, status FROM daemon_heartbeat")
    assert [line for line, _ in beats] == [LINE]


def test_sigkill_while_the_backlog_drains_loses_and_repeats_nothing(
    tmp_path: Path, cluster: Cluster, hook: Webhook
) -> None:
    site = plant_site(tmp_path, cluster, hook)
    cluster.stop()  # away from the start: the line starts and inspects without it
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        write_burst(site, 0, 12)
        wait_for(settled(site.database, 12), 180, daemon, "every file inspected")
        wait_for(lambda: alerts_sent(site, 12), 60, daemon, "every alert sent by the line")
        owed = backlog(site)
        assert owed >= 12 * 2  # each result and its alerts, at least
        cluster.start()
        wait_for(
            lambda: backlog(site) < owed or len(plant(cluster, FILE_QUERY)) > 0,
            120,
            daemon,
            "forwarding under way",
        )
        daemon.kill()
    with DaemonProcess(site) as daemon:
        daemon.wait_ready()
        wait_for(lambda: backlog(site) == 0, 120, daemon, "the backlog drained after restart")
        assert daemon.terminate() == 0
    assert_plant_equals_line(site, cluster, 12, hook)
