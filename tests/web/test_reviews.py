"""Reviewing an inspection from the page: the form on the detail page posted to a real
server, then the review in history (badge and filter), exports and ``/metrics``."""

from __future__ import annotations

import csv
import io
import json
import re
from urllib.parse import urlencode

from sqlalchemy import select

from padformer_edge.store.engine import open_engine
from padformer_edge.store.history import RECORD_COLUMNS
from padformer_edge.store.models import Review
from padformer_edge.web.server import WebServer
from tests.web.client import Reply, request
from tests.web.conftest import TOKEN
from tests.web.site import Site

BEARER = {"Authorization": f"Bearer {TOKEN}"}


def _post(server: WebServer, row: int, headers: dict[str, str], **form: str) -> Reply:
    body = urlencode(form).encode()
    return request(server.url, f"/inspections/{row}/review", method="POST", headers=headers,
                   body=body)  # fmt: skip


def _stored(site: Site) -> dict[int, tuple[str, str | None, str]]:
    engine = open_engine(site.db, read_only=True)
    with engine.connect() as conn:
        rows = conn.execute(select(Review.inspection_id, Review.verdict, Review.note,
                                   Review.reviewer)).all()  # fmt: skip
    engine.dispose()
    return {i: (v.value, n, r) for i, v, n, r in rows}


def _ids(page: str) -> list[int]:
    return [int(i) for i in re.findall(r'<td><a href="/inspections/(\d+)">', page)]


def test_the_detail_form_round_trip(server: WebServer, site: Site) -> None:
    row = site.anomalies[0]
    page = request(server.url, f"/inspections/{row}").text
    assert "Not reviewed yet." in page
    assert f'action="/inspections/{row}/review"' in page and 'value="false_alarm"' in page
    own = {"Origin": server.url}
    reply = _post(server, row, own, verdict="false_alarm", note="glare <b>on</b> the rim",
                  reviewer="ann", next=f"/inspections/{row}")  # fmt: skip
    assert reply.status == 303 and reply.headers["location"] == f"/inspections/{row}"
    assert _stored(site) == {row: ("false_alarm", "glare <b>on</b> the rim", "ann")}
    page = request(server.url, f"/inspections/{row}").text
    assert "false alarm</span> by ann" in page
    assert "glare &lt;b&gt;on&lt;/b&gt; the rim" in page  # autoescaped, never markup
    # Reviewing again replaces the verdict; no name given: the client address stands in.
    again = _post(server, row, own, verdict="true_defect")
    assert again.status == 200 and json.loads(again.body)["review"] == "true_defect"
    assert _stored(site) == {row: ("true_defect", None, "page user at 127.0.0.1")}


def test_a_review_is_refused_from_another_site_or_without_the_login(
    server: WebServer, token_server: WebServer, site: Site
) -> None:
    row = site.anomalies[1]
    evil = _post(server, row, {"Origin": "http://evil.example"}, verdict="false_alarm")
    assert evil.status == 403
    assert _post(server, row, {}, verdict="false_alarm").status == 403  # a form sends Origin
    assert _post(token_server, row, {"Origin": token_server.url},
                 verdict="false_alarm").status == 401  # fmt: skip
    assert _stored(site) == {}
    assert _post(token_server, row, BEARER, verdict="false_alarm").status == 200
    assert _stored(site)[row][0] == "false_alarm"


def test_bad_reviews_are_one_sentence(server: WebServer, site: Site) -> None:
    own = {"Origin": server.url}
    maybe = _post(server, site.anomalies[0], own, verdict="maybe")
    assert maybe.status == 400 and "review verdict 'maybe'" in maybe.text
    failed = _post(server, site.failed, own, verdict="true_defect")
    assert failed.status == 400 and f"inspection {site.failed} is failed" in failed.text
    assert _post(server, 999999, own, verdict="true_defect").status == 400
    page = request(server.url, f"/inspections/{site.failed}").text
    assert 'id="review"' not in page and "Only an inspected image" in page
    assert _stored(site) == {}


def test_history_shows_filters_and_exports_reviews(server: WebServer, site: Site) -> None:
    own = {"Origin": server.url}
    defect, alarm = site.anomalies[0], site.anomalies[1]
    assert _post(server, defect, own, verdict="true_defect", reviewer="ann").status == 200
    assert _post(server, alarm, own, verdict="false_alarm", note="dust").status == 200
    page = request(server.url, "/history?limit=500").text
    assert 'class="review review-true_defect"' in page and 'title="dust"' in page
    assert _ids(request(server.url, "/history?review=true_defect").text) == [defect]
    assert _ids(request(server.url, "/history?review=false_alarm").text) == [alarm]
    assert sorted(_ids(request(server.url, "/history?review=reviewed").text)) == sorted(
        [defect, alarm]
    )
    unreviewed = _ids(request(server.url, "/history?review=unreviewed&limit=500").text)
    assert defect not in unreviewed and site.good[0] in unreviewed
    bad = request(server.url, "/history?review=perhaps")
    assert bad.status == 400 and "review 'perhaps'" in bad.text
    rows = list(
        csv.DictReader(io.StringIO(request(server.url, "/history.csv?review=reviewed").text))
    )
    assert list(rows[0]) == RECORD_COLUMNS
    assert {int(r["id"]): (r["review"], r["review_note"], r["reviewed_by"]) for r in rows} == {
        defect: ("true_defect", "", "ann"),
        alarm: ("false_alarm", "dust", "page user at 127.0.0.1"),
    }
    as_json = json.loads(request(server.url, "/history.json?review=false_alarm").body)
    assert [(r["id"], r["review"]) for r in as_json] == [(alarm, "false_alarm")]


def test_metrics_count_reviews_per_profile_and_verdict(server: WebServer, site: Site) -> None:
    own = {"Origin": server.url}
    # site: even rows are cam-a / bolt, odd rows cam-b / nut; anomalies are rows 3, 6, 9.
    for row in site.anomalies:
        assert _post(server, row, own, verdict="true_defect").status == 200
    assert _post(server, site.good[0], own, verdict="false_alarm").status == 200
    text = request(server.url, "/metrics").text
    found = dict(re.findall(r'^padformer_reviews\{line="[^"]+",(product="[^"]+",verdict="[^"]+")\}'
                            r" (\S+)$", text, re.M))  # fmt: skip
    assert "# TYPE padformer_reviews gauge" in text
    assert found == {
        'product="bolt",verdict="true_defect"': "1.0",
        'product="bolt",verdict="false_alarm"': "1.0",
        'product="nut",verdict="true_defect"': "2.0",
        'product="nut",verdict="false_alarm"': "0.0",
    }
