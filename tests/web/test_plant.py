"""One page over every line, on a real server on 127.0.0.1 over the real store: the plant
view shows each line's heartbeat, images per minute and last alerts and drift events; a
user limited to lines sees and reviews only those lines' rows, by list, export, URL or
form; a picture kept on another line's PC is said to be there, with a link to the row
on that line's own page."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
from collections.abc import Callable
from html import unescape
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from pydantic import ValidationError
from sqlalchemy import func, select

from padformer_edge.store.drift import record_drift
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import default_line, with_line
from padformer_edge.store.models import Review
from padformer_edge.store.tables import inspections
from padformer_edge.store.users import add_user, remove_user, set_lines
from padformer_edge.store.vocabulary import Role
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.people import TTL_S
from padformer_edge.web.render import number
from padformer_edge.web.server import WebServer
from tests.web.client import Reply, request
from tests.web.site import Site
from tests.web.test_lines import OTHER, _beat, _other_line

LINE_URL = "https://press-2.plant.example:8443"
HTML = {"Accept": "text/html"}


def _section(page: str, element_id: str, end: str = "tr") -> str:
    """The element ``element_id`` (a table row, or a ``section``), unescaped."""
    found = re.search(rf'id="{re.escape(element_id)}".*?</{end}>', page, re.S)
    assert found, f"no element {element_id}"
    return unescape(found.group(0))


def _drift(site: Site, line: str, reason: str, inspection_id: int) -> None:
    engine = with_line(open_engine(site.db), line)
    record_drift(engine, camera="cam-a", product="bolt", kind="ks", statistic=0.4,
                 p_value=0.001, level=0.01, window_size=50, reason=reason,
                 inspection_id=inspection_id, requests=[])  # fmt: skip
    engine.dispose()


def test_the_plant_view_shows_every_line(serve: Callable[..., WebServer], site: Site) -> None:
    server = serve(line_urls={OTHER: LINE_URL})
    theirs = _other_line(site, 3)  # discovered now: inside the 15-minute window
    _beat(site, default_line(), age_s=1.0)
    _beat(site, OTHER, age_s=600.0)
    _drift(site, OTHER, "scores rose above the calibration", theirs[0])
    page = request(server.url, "/plant", headers=HTML).text
    mine, other = _section(page, f"line-{default_line()}"), _section(page, f"line-{OTHER}")
    assert "line-state-alive" in mine and f"Line {default_line()}'s daemon alive" in mine
    assert "line-state-stale" in other and f"Line {OTHER}'s daemon silent" in other
    assert re.search(r">alive, \d+ s ago<", mine) and ">silent for 10 min (limit 15 s)<" in other
    # the site's own rows were discovered 20 to 50 minutes ago: none in the window
    assert f'<td class="per-minute">{number(0.0)}</td>' in mine
    assert f'<td class="per-minute">{number(3 / 15)}</td>' in other
    assert f'href="/history?line={OTHER}"' in other
    assert f'href="/history?line={OTHER}&verdict=anomaly&review=unreviewed"' in other
    assert f'href="{LINE_URL}/"' in other and LINE_URL not in mine
    last_mine = _section(page, f"last-{default_line()}", "section")
    last_other = _section(page, f"last-{OTHER}", "section")
    assert "<td>hook</td>" in last_mine and "dead" in last_mine  # the site's alerts
    assert "scores rose above the calibration" in last_other and "(open)" in last_other
    assert "<td>hook</td>" not in last_other
    hour = request(server.url, "/plant?window=1h", headers=HTML).text
    # the ten results and the failed file count; the six rows still queued do not
    assert f'<td class="per-minute">{number(11 / 60)}</td>' in _section(
        hour, f"line-{default_line()}"
    )
    assert request(server.url, "/plant?window=2d").status == 400


def test_a_picture_on_another_line_is_said_to_be_there(
    serve: Callable[..., WebServer], site: Site
) -> None:
    """The plant's page has not the line PC's files: the detail page says where they are
    and links to the row on the line's own page, whose history filters find exactly it."""
    server = serve(line_urls={OTHER: LINE_URL})
    row = _other_line(site, 2)[1]
    page = request(server.url, f"/inspections/{row}", headers=HTML).text
    assert "The pictures are not on this server" in page and 'id="base"' not in page
    link = unescape(re.search(r'id="line-link" href="([^"]+)"', page).group(1))
    assert link.startswith(f"{LINE_URL}/history?")
    # This server reads the same database, so it answers the link as the line's page would.
    found = json.loads(request(server.url, "/history.json?" + urlsplit(link).query).body)
    assert [r["id"] for r in found] == [row]
    own = request(server.url, f"/inspections/{site.good[0]}", headers=HTML).text
    assert 'id="base"' in own and "pictures-elsewhere" not in own


def _pictures(page: str) -> list[str]:
    return [unescape(src) for src in re.findall(r'<img[^>]*\ssrc="([^"]+)"', page)]


def test_thumbnails_of_another_lines_rows_name_the_line_instead(
    serve: Callable[..., WebServer], site: Site
) -> None:
    """Live cards and history rows show no thumbnail this server cannot send (it would be
    a broken image): a placeholder names the line whose PC keeps the picture, and every
    picture the pages do ask for is there."""
    server = serve()
    theirs = _other_line(site, 2)  # the newest rows: first on both pages
    for path in ("/", "/history"):
        page = request(server.url, path, headers=HTML).text
        for row in theirs:
            assert f"/thumbs/{row}/" not in page
        assert page.count(f"Picture on line {OTHER}'s PC" if path == "/" else
                          f"on {OTHER}'s PC</span>") == len(theirs)  # fmt: skip
        shown = _pictures(page)
        assert any(src.startswith("/thumbs/") for src in shown)  # the site's own rows
        for src in shown:
            assert request(server.url, src).status == 200, src
    cards = {c["id"]: c for c in json.loads(request(server.url, "/api/live").body)}
    for row in theirs:  # what the live stream sends the page script
        assert (cards[row]["elsewhere"], cards[row]["thumb"]) == (OTHER, None)
    assert cards[site.good[0]]["elsewhere"] is None
    assert cards[site.failed]["thumb"] == "/static/refused.svg"


def test_a_picture_gone_from_the_servers_own_pc_is_said_removed(
    serve: Callable[..., WebServer], site: Site
) -> None:
    """The server knows its own line: a row of it whose picture file was cleaned away
    says the picture was removed from this PC, and only another line's row says its
    picture is on that line's PC; a row whose picture is here keeps its thumbnail."""
    gone, kept = site.good[-1], site.good[0]  # the newest of the site's own results
    Path(_recorded(site, gone)).unlink()
    theirs = _other_line(site, 1)
    server = serve()
    for path, shown in (("/", r'data-id="{}".*?</article>'),
                        ("/history", r'href="/inspections/{0}">{0}</a>.*?</tr>')):  # fmt: skip
        page = request(server.url, path, headers=HTML).text
        assert f"{default_line()}'s PC" not in page, path
        own = re.search(shown.format(gone), page, re.S).group(0)
        assert "/thumbs/" not in own and ("no longer on this PC" in own or ">removed<" in own)
        assert f"/thumbs/{kept}/image" in re.search(shown.format(kept), page, re.S).group(0)
        other = re.search(shown.format(theirs[0]), page, re.S).group(0)
        assert f"{OTHER}'s PC" in other and "removed" not in other, path
    cards = {c["id"]: c for c in json.loads(request(server.url, "/api/live").body)}
    assert (cards[gone]["removed"], cards[gone]["elsewhere"], cards[gone]["thumb"]) == (
        True, None, None)  # fmt: skip
    assert (cards[theirs[0]]["removed"], cards[theirs[0]]["elsewhere"]) == (False, OTHER)
    assert (cards[kept]["removed"], cards[kept]["elsewhere"]) == (False, None)
    detail = request(server.url, f"/inspections/{gone}", headers=HTML).text
    assert 'id="pictures-removed"' in detail and "pictures-elsewhere" not in detail
    assert 'id="base"' not in detail
    # The same database served on line press-2's PC: its rows are now its own.
    on_other = serve(line=OTHER)
    cards = {c["id"]: c for c in json.loads(request(on_other.url, "/api/live").body)}
    assert (cards[theirs[0]]["removed"], cards[theirs[0]]["elsewhere"]) == (True, None)
    assert (cards[gone]["removed"], cards[gone]["elsewhere"]) == (False, default_line())
    # and the site's line's pictures are that line's, though this test's PC holds them
    assert (cards[kept]["elsewhere"], cards[kept]["thumb"]) == (default_line(), None)


def _recorded(site: Site, row: int) -> str:
    """The picture path the store recorded for ``row``."""
    engine = open_engine(site.db)
    with engine.connect() as conn:
        path = conn.execute(select(inspections.c.source_path).where(inspections.c.id == row))
        found = str(path.scalar_one())
    engine.dispose()
    return found


def test_line_urls_are_checked() -> None:
    with pytest.raises(ValidationError, match="is not a line name"):
        HttpConfig(line_urls={"press 1": LINE_URL})
    with pytest.raises(ValidationError, match="is not an http"):
        HttpConfig(line_urls={"press-1": "press-1.plant:8080"})


def _login(server: WebServer, name: str, token: str) -> dict[str, str]:
    body = urlencode({"name": name, "token": token, "next": "/"}).encode()
    reply = request(server.url, "/login", method="POST", headers={"Origin": server.url},
                    body=body)  # fmt: skip
    assert reply.status == 303, reply.text
    return {"Cookie": reply.headers["set-cookie"].split(";")[0]}


def _review(server: WebServer, row: int, who: dict[str, str]) -> Reply:
    return request(server.url, f"/inspections/{row}/review", method="POST",
                   headers={"Origin": server.url, **who},
                   body=urlencode({"verdict": "false_alarm"}).encode())  # fmt: skip


def _reviews_of(site: Site, row: int) -> int:
    engine = open_engine(site.db, read_only=True)
    with engine.connect() as conn:
        count = conn.execute(
            select(func.count()).select_from(Review).where(Review.inspection_id == row)
        ).scalar()
    engine.dispose()
    return int(count or 0)


def test_a_user_limited_to_a_line_sees_and_reviews_only_its_rows(
    server: WebServer, site: Site
) -> None:
    theirs = _other_line(site, 3)
    _beat(site, default_line(), age_s=1.0)
    _beat(site, OTHER, age_s=1.0)
    engine = open_engine(site.db)
    ola = add_user(engine, "ola", Role.operator, [OTHER])[1]
    eve = add_user(engine, "eve", Role.engineer)[1]
    engine.dispose()
    ola_in, eve_in = _login(server, "ola", ola), _login(server, "eve", eve)
    hidden = site.anomalies[0]  # a row of the site's own line
    # by URL: another line's row is as absent as a row that never existed
    assert request(server.url, f"/inspections/{hidden}", headers=ola_in).status == 404
    assert request(server.url, f"/inspections/{theirs[0]}", headers=ola_in).status == 200
    for kind in ("media", "thumbs"):
        assert request(server.url, f"/{kind}/{site.good[0]}/image", headers=ola_in).status == 404
        assert request(server.url, f"/{kind}/{site.good[0]}/image", headers=eve_in).status == 200
    refused = _review(server, hidden, ola_in)
    assert refused.status == 404 and _reviews_of(site, hidden) == 0
    assert _review(server, theirs[0], ola_in).status == 200 and _reviews_of(site, theirs[0]) == 1
    retry = request(server.url, f"/alerts/{site.dead_alert}/retry", method="POST",
                    headers={"Origin": server.url, **ola_in}, body=b"")  # fmt: skip
    assert retry.status == 400 and f"there is no alert {site.dead_alert}" in retry.text
    # lists and exports hold their line's rows only, whatever the filter asks
    listed = json.loads(request(server.url, "/history.json?limit=500", headers=ola_in).body)
    assert sorted(r["id"] for r in listed) == sorted(theirs)
    asked = f"/history.json?line={default_line()}"
    assert json.loads(request(server.url, asked, headers=ola_in).body) == []
    exported = list(csv.DictReader(io.StringIO(
        request(server.url, "/history.csv", headers=ola_in).text)))  # fmt: skip
    assert sorted(int(r["id"]) for r in exported) == sorted(theirs)
    assert {r["line"] for r in exported} == {OTHER}
    live = json.loads(request(server.url, "/api/live", headers=ola_in).body)
    assert {c["line"] for c in live} == {OTHER}
    history = request(server.url, "/history", headers={**ola_in, **HTML}).text
    assert f'<option value="{default_line()}"' not in history
    health = request(server.url, "/health", headers={**ola_in, **HTML}).text
    assert 'id="dead-alerts"' not in health and 'id="failed"' not in health
    plant = request(server.url, "/plant", headers={**ola_in, **HTML}).text
    assert f'id="line-{OTHER}"' in plant and f'id="line-{default_line()}"' not in plant
    beat = json.loads(request(server.url, "/api/heartbeat", headers=ola_in).body)
    assert default_line() not in beat["sentence"]
    assert request(server.url, "/metrics", headers=ola_in).status == 403
    # a user with no lines sees the plant
    assert request(server.url, f"/inspections/{hidden}", headers=eve_in).status == 200
    assert len(json.loads(request(server.url, "/history.json?limit=500",
                                  headers=eve_in).body)) > len(theirs)  # fmt: skip
    # lines given back reach the open session once the page re-reads its users
    engine = open_engine(site.db)
    assert set_lines(engine, "ola", []).lines == frozenset()
    engine.dispose()
    server.app.people.forget()
    assert request(server.url, f"/inspections/{hidden}", headers=ola_in).status == 200


class EventStream:
    """``/events`` read as a browser reads it, over one socket (``Connection: close``, so
    the end of the stream is the end of the socket)."""

    def __init__(self, server: WebServer, headers: dict[str, str], timeout_s: float) -> None:
        self.sock = socket.create_connection((server.host, server.port), timeout=timeout_s)
        sent = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self.sock.sendall(f"GET /events HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                          f"Connection: close\r\n{sent}\r\n".encode())  # fmt: skip
        self.reader = self.sock.makefile("rb")
        assert b" 200 " in self.reader.readline()

    def next_cards(self) -> list[dict] | None:
        """The next card list sent; None once the server ended the stream."""
        while line := self.reader.readline():
            if line.startswith(b"data: "):
                return json.loads(line[6:])
        return None

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


def test_an_open_event_stream_follows_its_users_lines_and_ends_with_the_user(
    server: WebServer, site: Site
) -> None:
    """The audit's carl: a user of every line opens /events; limited to one line, the
    next cards hold none of another line's, a new one of that line included; removed,
    the stream ends. Each within the user list's re-read (``people.TTL_S``) and a poll:
    the socket waits no longer than a few of those for what the stream must send."""
    _other_line(site, 1)
    engine = open_engine(site.db)
    carl = _login(server, "carl", add_user(engine, "carl", Role.operator)[1])
    add_user(engine, "eve", Role.engineer)  # the page keeps needing a login once carl goes
    stream = EventStream(server, carl, timeout_s=3 * (TTL_S + server.app.event_interval_s))
    try:
        first = stream.next_cards()
        assert first is not None and {c["line"] for c in first} == {default_line(), OTHER}
        set_lines(engine, "carl", [default_line()])
        while (cards := stream.next_cards()) is not None and OTHER in {c["line"] for c in cards}:
            pass  # what the stream sent before the page re-read its users
        assert cards is not None and {c["line"] for c in cards} == {default_line()}
        (arrived,) = _other_line(site, 1, first=1)
        remove_user(engine, "carl")
        while (cards := stream.next_cards()) is not None:
            assert arrived not in {c["id"] for c in cards}
            assert {c["line"] for c in cards} == {default_line()}
    finally:
        stream.close()
        engine.dispose()


def test_another_lines_picture_is_never_served_from_this_pcs_files(
    server: WebServer, site: Site
) -> None:
    """The audit's row 17: a row of press-2 whose recorded paths name files that exist on
    this server's PC (each line numbers its heatmaps from 1 under its own state folder).
    The row's line decides: its pictures and thumbnails answer 404 with the sentence its
    detail page says, to a user of that line; this server's own row is still served."""
    (theirs,) = _other_line(site, 1, first=7)
    own = site.good[0]
    engine = open_engine(site.db)
    with engine.begin() as conn:
        paths = conn.execute(
            select(inspections.c.source_path, inspections.c.heatmap_path)
            .where(inspections.c.id == own)
        ).one()  # fmt: skip
        conn.execute(inspections.update().where(inspections.c.id == theirs).values(
            source_path=paths.source_path, heatmap_path=paths.heatmap_path))  # fmt: skip
    tess = _login(server, "tess", add_user(engine, "tess", Role.operator, [OTHER])[1])
    eve = _login(server, "eve", add_user(engine, "eve", Role.engineer)[1])
    engine.dispose()
    said = f"The pictures are not on this server: they stay on line {OTHER}'s PC"
    detail = request(server.url, f"/inspections/{theirs}", headers={**tess, **HTML}).text
    assert said in unescape(detail) and 'id="base"' not in detail
    for route in ("media", "thumbs"):
        for kind in ("image", "heatmap"):
            for who in (tess, eve):
                reply = request(server.url, f"/{route}/{theirs}/{kind}", headers=who)
                assert (reply.status, reply.text.strip()) == (404, f"{said}."), route
            assert request(server.url, f"/{route}/{own}/{kind}", headers=eve).status == 200


def test_paging_from_another_lines_id_answers_as_from_an_unknown_one(
    server: WebServer, site: Site
) -> None:
    """``/history?before=ID`` with an id of a line the user may not see gives the page an
    unknown id gives (the first), so the answer tells neither that the id exists nor
    roughly when it came; an id of their own line still pages."""
    theirs = _other_line(site, 3)
    engine = open_engine(site.db)
    ola = _login(server, "ola", add_user(engine, "ola", Role.operator, [OTHER])[1])
    engine.dispose()

    def listed(query: str) -> list[int]:
        """The ids of the history page's rows (``before`` pages the page, not an export)."""
        page = request(server.url, f"/history?limit=2&{query}", headers={**ola, **HTML})
        assert page.status == 200, page.text
        rows = _section(page.text, "rows", "table")
        return [int(i) for i in re.findall(r'href="/inspections/(\d+)">\1</a>', rows)]

    unknown = listed(f"before={10**9}")
    assert unknown == sorted(theirs, reverse=True)[:2]
    for hidden in (*site.good, *site.anomalies):
        assert listed(f"before={hidden}") == unknown, hidden
    assert listed(f"before={unknown[-1]}") == [min(theirs)]  # their own id still pages
