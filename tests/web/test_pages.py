"""The pages and data endpoints over a seeded store, through a real server: history
filters and paging, exports equal to ``results list``, detail, health, /metrics and the
live event stream; on SQLite, and on PostgreSQL when a test database is configured."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import subprocess
import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import cv2
import numpy as np
import pytest
from markupsafe import escape
from prometheus_client.parser import text_string_to_metric_families

from padformer_edge.daemon.alerts.config import AlertsConfig
from padformer_edge.daemon.alerts.planning import Cooldown, plan_alerts
from padformer_edge.store.engine import open_engine
from padformer_edge.store.heartbeat import record_heartbeat
from padformer_edge.store.history import (
    COLUMNS,
    RECORD_COLUMNS,
    Filters,
    list_inspections,
    record,
    records,
)
from padformer_edge.store.lines import default_line
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.queue import DetectionOutcome, claim_batch, complete, enqueue
from padformer_edge.web import queries
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.media import MediaRoots
from padformer_edge.web.pages import HISTORY_COLUMNS
from padformer_edge.web.render import number
from padformer_edge.web.server import WebServer, make_server
from tests.cli_process import REPO
from tests.web.client import request
from tests.web.site import PROFILE_VERSION, THRESHOLD, Site


def _ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<td><a href="/inspections/(\d+)">', page)]


def test_history_lists_newest_first_and_filters_change_the_rows(
    server: WebServer, site: Site
) -> None:
    everything = _ids(request(server.url, "/history").text)
    assert everything == sorted(everything, reverse=True)
    assert set(site.good + site.anomalies) <= set(everything)
    cam_a = _ids(request(server.url, "/history?camera=cam-a").text)
    assert cam_a and set(cam_a) < set(everything)
    anomalies = _ids(request(server.url, "/history?verdict=anomaly").text)
    assert anomalies == sorted(site.anomalies, reverse=True)
    good_nut = _ids(request(server.url, "/history?verdict=good&product=nut").text)
    assert good_nut and all(i in site.good for i in good_nut)
    failed = _ids(request(server.url, "/history?verdict=failed").text)
    assert failed == [site.failed]
    recent = _ids(request(server.url, "/history?since=35m").text)
    assert site.failed in recent and site.good[0] not in recent
    older = _ids(request(server.url, "/history?until=45m").text)
    assert older and site.failed not in older


def test_history_pages_with_an_older_link_until_the_end(server: WebServer, site: Site) -> None:
    seen: list[int] = []
    path = "/history?limit=4&camera=cam-a"
    while path:
        page = request(server.url, path).text
        seen += _ids(page)
        link = re.search(r'id="older" href="([^"]+)"', page)
        path = link.group(1).replace("&amp;", "&") if link else ""
    everything = _ids(request(server.url, "/history?camera=cam-a&limit=500").text)
    assert seen == everything and len(seen) > 4


def test_a_bad_filter_is_one_sentence(server: WebServer) -> None:
    reply = request(server.url, "/history?since=yesterday")
    assert reply.status == 400 and "since 'yesterday'" in reply.text
    assert request(server.url, "/history?verdict=maybe").status == 400
    assert request(server.url, "/history?limit=0").status == 400
    assert request(server.url, "/health?window=3y").status == 400


def test_exports_are_the_rows_of_results_list(server: WebServer, site: Site) -> None:
    engine = open_engine(site.db, read_only=True)
    expected = [record(r) for r in list_inspections(engine, Filters(camera="cam-b"), limit=1000)]
    engine.dispose()
    as_json = json.loads(request(server.url, "/history.json?camera=cam-b").body)
    assert as_json == expected
    reply = request(server.url, "/history.csv?camera=cam-b")
    assert "attachment" in reply.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(reply.text)))
    assert list(rows[0]) == RECORD_COLUMNS
    assert [int(r["id"]) for r in rows] == [r["id"] for r in expected]


def test_page_rows_are_the_records_and_each_cell_sits_under_its_heading(
    server: WebServer, site: Site
) -> None:
    """The history page's rows come from ``records`` (which converts only the columns
    whose type needs it) and its row template writes the cells one by one: both must
    agree with what they stand for, ``record`` of each row and ``HISTORY_COLUMNS``."""
    engine = open_engine(site.db, read_only=True)
    rows = list_inspections(engine, Filters(), limit=1000)
    engine.dispose()
    assert records(rows) == [record(r) for r in rows]
    as_times = [{k: v.isoformat() if isinstance(v, datetime) else v for k, v in r.items()}
                for r in records(rows, times_as_text=False)]  # fmt: skip
    assert as_times == [record(r) for r in rows]
    assert queries.Shown._fields == tuple(COLUMNS)  # the detail page's row, by position
    page = request(server.url, "/history?limit=500").text
    cells_of = re.compile(
        r'<tr class="verdict-[a-z]+">\n(<td><a href="/inspections/(\d+)">.*?)</tr>', re.S
    )
    found = {int(m.group(2)): m.group(1) for m in cells_of.finditer(page)}
    headings = [label for _, label in HISTORY_COLUMNS]
    assert len(found) == len(rows)
    for row in rows:
        cells = re.findall(r"<td[^>]*>(.*?)</td>", found[row.id], re.S)
        assert len(cells) == len(headings)
        shown = dict(zip(headings, cells, strict=True))
        assert shown["id"] == f'<a href="/inspections/{row.id}">{row.id}</a>'
        named = (shown["line"], shown["camera"], shown["profile"], shown["file"])
        assert named == tuple(escape(v) for v in (row.line, row.camera, row.product,
                                                  row.source_path))  # fmt: skip
        assert shown["threshold"] == number(row.threshold)
        assert shown["verdict"] == f'<span class="verdict">{queries.verdict_of(record(row))}</span>'


def test_detail_shows_scores_threshold_times_and_alert_states(
    server: WebServer, site: Site
) -> None:
    row = site.anomalies[0]
    page = request(server.url, f"/inspections/{row}").text
    score = float(re.search(r'id="score">([^<]+)<', page).group(1))
    assert score > THRESHOLD
    assert f"{score / THRESHOLD:.4g}" in page  # normalised score
    assert "ms</td>" in page and 'id="opacity"' in page and f"/media/{row}/heatmap" in page
    assert "hook" in page and any(s in page for s in ("dead", "sent", "pending"))
    assert f'id="profile-version">{PROFILE_VERSION}<' in page  # the version that scored it
    failed = request(server.url, f"/inspections/{site.failed}").text  # never scored
    assert 'id="profile-version">not recorded<' in failed
    assert request(server.url, "/inspections/999999").status == 404


def test_an_anomaly_the_cooldown_held_back_says_so_not_no_alerts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 51: an anomaly whose alert the cooldown held back said "No alerts" on its
    detail page. Three results planned as the worker plans them, through one cooldown:
    an anomaly that alerts, one held back, and a good part."""
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    db = str(tmp_path / "held.sqlite3")
    engine = open_engine(db)
    upgrade(engine)
    cooldown, config, ids = Cooldown(3600.0), AlertsConfig(), []
    for n, score in enumerate((2.0, 3.0, 0.5)):
        row = enqueue(engine, camera="cam", product="bolt", source_path=f"/cams/{n}.png",
                      sha256=f"{n}" * 64, size_bytes=1)  # fmt: skip
        claim_batch(engine, 1)
        outcome = DetectionOutcome(score=score, threshold=1.0, heatmap_path=None,
                                   model_sha256="0" * 64, detect_ms=1.0)  # fmt: skip
        if outcome.is_anomaly:  # as the worker plans: from the outcome's verdict
            requests = plan_alerts(config, cooldown=cooldown, camera="cam", product="bolt",
                                   score=score, threshold=1.0, reason="over")  # fmt: skip
            outcome = replace(outcome, alerts=requests)
        complete(engine, row.id, outcome)
        ids.append(row.id)
    engine.dispose()
    alerted, held, good = ids
    server = make_server(HttpConfig(port=0), db, [tmp_path]).start()
    try:
        first = request(server.url, f"/inspections/{alerted}").text
        assert 'id="alerts"' in first and "held-back" not in first
        page = request(server.url, f"/inspections/{held}").text
        assert "No alerts." not in page and 'id="held-back"' in page
        assert "the alert cooldown (<code>alerts.cooldown_s</code>" in page
        link = f'<a href="/inspections/{alerted}">inspection {alerted}</a>'
        assert f"after the alert of {link}" in page
        assert "<p>No alerts.</p>" in request(server.url, f"/inspections/{good}").text
    finally:
        server.stop()
        server.app.close()


def test_a_frame_without_a_part_is_a_grey_card_that_says_so_not_a_score(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A framed profile's ``no_part`` frame is neither good nor an anomaly: its card, its
    history row and its detail page name it in words, with no score shown."""
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    db = str(tmp_path / "frames.sqlite3")
    engine = open_engine(db)
    upgrade(engine)
    ids = []
    for n, no_part in enumerate((True, False)):
        row = enqueue(engine, camera="cam", product="bolt", source_path=f"/cams/{n}.jpg",
                      sha256=f"{n}" * 64, size_bytes=1)  # fmt: skip
        claim_batch(engine, 1)
        complete(engine, row.id, DetectionOutcome(float("nan") if no_part else 0.5, 1.0, None,
                                                  "0" * 64, 1.0, no_part=no_part))  # fmt: skip
        ids.append(row.id)
    engine.dispose()
    empty, good = ids
    server = make_server(HttpConfig(port=0), db, [tmp_path]).start()
    try:
        live = request(server.url, "/").text
        (card,) = [a for a in live.split("<article")[1:] if f'data-id="{empty}"' in a]
        (other,) = [a for a in live.split("<article")[1:] if f'data-id="{good}"' in a]
        assert "verdict-good" in other and "score 0.5" in other
        assert 'class="card verdict-no_part"' in card and ">no part<" in card
        assert "no part found in the frame: not scored" in card and "nan" not in card.lower()
        history = request(server.url, "/history").text
        assert '<tr class="verdict-no_part">' in history and ">no part<" in history
        detail = request(server.url, f"/inspections/{empty}").text
        assert 'class="verdict verdict-no_part">no part<' in detail
    finally:
        server.stop()
        server.app.close()


def test_health_reports_cameras_queue_failures_outbox_and_heartbeat(
    server: WebServer, site: Site
) -> None:
    page = request(server.url, "/health").text
    assert "cam-a" in page and "cam-b" in page
    assert "image is truncated (no PNG trailer)" in page
    assert "dead: 1" in page and "sent: 1" in page
    assert re.search(r'id="queue-depth">(\d+)<', page).group(1) == str(len(site.hostile))
    assert "never seen" in page
    engine = open_engine(site.db)
    now = datetime.now(UTC)
    record_heartbeat(engine, interval_s=5.0, started_at=now, pid=1, host="line-pc",
                     status="backlog 0")  # fmt: skip
    engine.dispose()
    page = request(server.url, "/health").text
    assert re.search(r'id="heartbeat-age">[0-9.e-]+ s ago', page)


def _samples(text: str) -> dict[tuple[str, tuple], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_count_what_finishes_after_start_and_the_queue(
    server: WebServer, site: Site
) -> None:
    """Counters start at zero with the process (Prometheus handles the reset); results
    finished later count at once, whether they are above the oldest queued row or it."""
    first = _samples(request(server.url, "/metrics").text)
    line = ("line", default_line())  # the site's rows are stored with no line bound
    done_a = ("padformer_inspections_total",
              (("camera", "cam-a"), line, ("product", "bolt"), ("status", "done")))  # fmt: skip
    assert first.get(done_a, 0) == 0
    assert first[("padformer_queue_depth", (line, ("status", "pending")))] == len(site.hostile)
    assert first[("padformer_alerts", (line, ("state", "dead")))] == 1
    assert first[("padformer_alerts", (line, ("state", "sent")))] == 1
    # A new row above the oldest queued one finishes first, then that oldest row.
    engine = open_engine(site.db)
    row = enqueue(engine, camera="cam-a", product="bolt", source_path="/x/new.png",
                  sha256="f" * 64, size_bytes=1, discovered_at=datetime.now(UTC))  # fmt: skip
    oldest = min(site.hostile.values())
    claimed = [r.id for r in claim_batch(engine, 100)]
    assert row.id in claimed and oldest in claimed
    complete(engine, row.id, DetectionOutcome(0.1, THRESHOLD, None, "0" * 64, 12.0))
    time.sleep(1.1)  # the collector reads the store at most once a second
    second = _samples(request(server.url, "/metrics").text)
    assert second[done_a] == 1
    assert second[("padformer_detect_seconds_count", (("camera", "cam-a"), line))] == 1
    bucket = "padformer_detect_seconds_bucket"
    assert second[(bucket, (("camera", "cam-a"), ("le", "0.01"), line))] == 0
    assert second[(bucket, (("camera", "cam-a"), ("le", "0.025"), line))] == 1
    assert second[("padformer_detect_seconds_sum", (("camera", "cam-a"), line))] == 0.012
    processing = ("padformer_queue_depth", (line, ("status", "processing")))
    assert second[processing] == len(site.hostile)
    complete(engine, oldest, DetectionOutcome(5.0, THRESHOLD, None, "0" * 64, 500.0))
    engine.dispose()
    time.sleep(1.1)
    third = _samples(request(server.url, "/metrics").text)
    assert third[done_a] == 2
    assert third[("padformer_detect_seconds_count", (("camera", "cam-a"), line))] == 2
    anomalies_a = ("padformer_anomalies_total",
                   (("camera", "cam-a"), line, ("product", "bolt")))  # fmt: skip
    assert third[anomalies_a] == 1
    assert third[processing] == len(site.hostile) - 1


def test_the_event_stream_sends_a_new_card(server: WebServer, site: Site) -> None:
    with socket.create_connection((server.host, server.port), timeout=20) as sock:
        sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
        stream = sock.makefile("rb")
        assert b"200" in stream.readline()

        def next_cards() -> list[dict]:
            while True:
                line = stream.readline()
                assert line, "the stream ended"
                if line.startswith(b"data: "):
                    return json.loads(line[6:])

        first = next_cards()
        assert {c["id"] for c in first} >= {site.failed}
        engine = open_engine(site.db)
        row = enqueue(engine, camera="cam-z", product="bolt", source_path="/x/live.png",
                      sha256="e" * 64, size_bytes=1, discovered_at=datetime.now(UTC))  # fmt: skip
        engine.dispose()
        card = next(c for c in next_cards() if c["id"] == row.id)
        assert card["camera"] == "cam-z" and card["verdict"] == "queued"


def test_the_web_package_imports_nothing_of_model_detect_or_daemon() -> None:
    code = (
        "import sys, padformer_edge.web.asgi, padformer_edge.web.server\n"
        "import padformer_edge.cli.serve_cmd\n"
        "bad = [m for m in sys.modules if m.split('.')[:2] in (['padformer_edge','model'],"
        "['padformer_edge','detect']) or m in ('torch', 'padformer_edge.daemon.service')]\n"
        "print(bad)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_a_tiff_under_a_root_is_sent_as_png_and_a_corrupt_one_not_at_all(tmp_path: Path) -> None:
    """Browsers do not show TIFF, which cameras often write."""
    image = np.zeros((20, 30, 3), np.uint8)
    image[5:10, 5:25] = (0, 0, 255)
    tiff = tmp_path / "cam" / "part.tiff"
    tiff.parent.mkdir()
    assert cv2.imwrite(str(tiff), image)
    picture = MediaRoots([tmp_path / "cam"]).read(str(tiff))
    assert picture is not None and picture.content_type == "image/png"
    decoded = cv2.imdecode(np.frombuffer(picture.data, np.uint8), cv2.IMREAD_COLOR)
    assert np.array_equal(decoded, image)
    broken = tmp_path / "cam" / "broken.tif"
    broken.write_bytes(b"II*\x00 not really a tiff")
    assert MediaRoots([tmp_path / "cam"]).read(str(broken)) is None
    assert MediaRoots([tmp_path / "elsewhere"]).read(str(tiff)) is None
