"""Every query parameter checked before it reaches the database: an out-of-range or
malformed value is a 400 with one sentence naming it, and a seeded fuzz over every route
of a real server (each path parameter, query parameter and form field, hostile values
included) finds no 500 and no error in the log."""

from __future__ import annotations

import http.client
import random
import time
from urllib.parse import quote, urlencode, urlsplit

import pytest
from starlette.routing import Mount, Route
from structlog.testing import capture_logs

from padformer_edge.web.server import WebServer
from tests.web.client import request
from tests.web.conftest import TOKEN
from tests.web.site import Site

BEARER = {"Authorization": f"Bearer {TOKEN}"}
SEED = 42
REQUESTS = 700
FUZZ_BUDGET_S = 60.0

# (query string, the words the 400's sentence must hold)
REFUSED = [
    ("before=99999999999999999999999", "before 99999999999999999999999 is out of range"),
    ("before=0", "before 0 is out of range"),
    ("before=-3", "before -3 is out of range"),
    ("before=1e5", "before '1e5' is not a whole number"),
    ("before=" + "9" * 5000, "is out of range"),
    ("limit=501", "limit 501 is out of range; use 1 to 500"),
    ("limit=%EF%BC%91", "is not a whole number"),  # a full-width digit one
    ("camera=" + "c" * 201, "camera is longer than 200 characters"),
    ("product=a%00b", "product contains a control character"),
    ("since=99999999999w", "since '99999999999w' is too long an age"),
    ("since=999999999d", "reaches back before the year 1"),
    ("until=0001-01-01T00:00%2B01:00", "outside the years 1 to 9999"),
    ("verdict=maybe", "verdict 'maybe' is not one of"),
]


@pytest.mark.parametrize(("query", "words"), REFUSED)
def test_a_bad_history_parameter_is_a_400_with_its_sentence(
    server: WebServer, query: str, words: str
) -> None:
    for path in ("/history", "/history.csv", "/history.json"):
        if path != "/history" and query.startswith("before"):
            continue  # the exports ignore paging
        reply = request(server.url, f"{path}?{query}")
        assert reply.status == 400, (path, query, reply.text)
        assert words in reply.text and reply.text.count("\n") == 1, reply.text


def test_the_largest_row_id_is_still_a_page(server: WebServer) -> None:
    assert request(server.url, f"/history?before={2**63 - 1}").status == 200
    assert request(server.url, f"/history?before={2**63}").status == 400


# -- the fuzz -----------------------------------------------------------------------------
QUERY_NAMES = ("verdict", "review", "camera", "product", "since", "until", "before", "limit",
               "window", "next", "fmt", "id")  # fmt: skip
FORM_NAMES = ("token", "next", "verdict", "reviewer", "note")


def _values(rng: random.Random, site: Site) -> list[str]:
    """Hostile and ordinary values: numbers at and past every bound, times at the ends of
    the calendar, ages too long to count, control and non-ASCII characters, long text,
    and the words the filters accept."""
    fixed = ["", "0", "-1", "1", "50", "500", "501", str(2**63 - 1), str(2**63), "9" * 30,
             "9" * 4500, "1e5", "nan", "inf", "-0", " 7", "0x10", "１", "\x00", "\r\n", "%",
             "é", "😀", "a" * 5000, "2026-01-01", "0001-01-01T00:00+01:00",
             "9999-12-31T23:59-01:00", "9999-12-31", "1h", "15m", "24h", "999999999w",
             "99999999999d", "2h ", "//evil.example", "/\\evil", "/history?x=1", "<script>",
             "anomaly", "good", "failed", "queued", "skipped", "reviewed", "unreviewed",
             "true_defect", "false_alarm", "cam-a", "bolt", TOKEN, "=1+1",
             str(site.good[0]), str(site.failed)]  # fmt: skip
    drawn = ["".join(chr(rng.randrange(0, 0x2FF)) for _ in range(rng.randrange(1, 12)))
             for _ in range(20)]  # fmt: skip
    return fixed + drawn


def _path(template: str, rng: random.Random, site: Site) -> str:
    ids = [str(site.good[0]), str(site.failed), str(site.dead_alert), "0", "9" * 18,
           str(rng.randrange(1, 10**6))]  # fmt: skip
    kinds = ["image", "heatmap", "thumb", "..", "%2e%2e", "x" * 300]
    fmts = ["csv", "json", "xml", "", "csv%00"]
    path = template
    for name, pool in (("{inspection_id:row_id}", ids), ("{alert_id:row_id}", ids),
                       ("{kind}", kinds), ("{fmt}", fmts)):  # fmt: skip
        path = path.replace(name, rng.choice(pool))
    return path


def _send(base: str, method: str, path: str, headers: dict[str, str],
          body: bytes | None) -> tuple[int, dict[str, str]]:  # fmt: skip
    """The status and headers of one request; an event stream is hung up on at its head."""
    parts = urlsplit(base)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": parts.netloc, **headers}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
            sent["Content-Length"] = str(len(body))
        for name, value in sent.items():
            conn.putheader(name, value)
        conn.endheaders(body)
        reply = conn.getresponse()
        if "event-stream" not in reply.getheader("content-type", ""):
            reply.read()
        return reply.status, {k.lower(): v for k, v in reply.getheaders()}
    finally:
        conn.close()


def _routes(server: WebServer) -> list[tuple[str, str]]:
    """(method, path template) of every route the running app has."""
    found: list[tuple[str, str]] = []
    for route in server.server.config.app.routes:
        if isinstance(route, Route):
            found += [(m, route.path) for m in sorted(route.methods or ()) if m != "HEAD"]
        elif isinstance(route, Mount):
            found.append(("GET", route.path + "/{kind}"))
    return found


def test_a_seeded_fuzz_of_every_route_and_parameter_finds_no_500(
    token_server: WebServer, site: Site
) -> None:
    token_server.app.throttle.max_failures = 10**9  # wrong tokens are part of the fuzz
    rng = random.Random(SEED)
    values = _values(rng, site)
    routes = _routes(token_server)
    assert ("GET", "/history") in routes and ("POST", "/login") in routes
    statuses: dict[int, int] = {}
    failures: list[str] = []
    started = time.monotonic()
    with capture_logs() as logs:
        for n in range(REQUESTS):
            method, template = routes[n % len(routes)]  # every route, in turn
            path = _path(template, rng, site)
            names = rng.sample(QUERY_NAMES, rng.randrange(0, 4))
            query = urlencode({k: rng.choice(values) for k in names}, quote_via=quote)
            if rng.random() < 0.1:  # a raw, undecodable query string too
                query += "&" + rng.choice(["%", "%zz", "a=%ff%fe", "=&&=", "before"])
            headers = dict(BEARER) if rng.random() < 0.9 else {}
            if rng.random() < 0.3:
                headers["Accept"] = "text/html"
            body = None
            if method == "POST":
                headers["Origin"] = rng.choice([token_server.url, "http://evil.example", "null"])
                form = {k: rng.choice(values) for k in rng.sample(FORM_NAMES, rng.randrange(0, 5))}
                body = urlencode(form).encode()
            status, _ = _send(token_server.url, method, path + (f"?{query}" if query else ""),
                              headers, body)  # fmt: skip
            statuses[status] = statuses.get(status, 0) + 1
            if status >= 500:
                failures.append(f"{status} {method} {path}?{query}")
    elapsed = time.monotonic() - started
    errors = [e for e in logs if e.get("log_level") == "error"]
    assert failures == [] and errors == [], (failures[:5], errors[:3])
    assert {200, 400, 404}.issubset(statuses), statuses  # it reached handlers and refusals
    assert elapsed < FUZZ_BUDGET_S, f"the fuzz took {elapsed:.0f} s"


# -- every path segment -------------------------------------------------------------------
# Issue 51's audit: GET /static/%00 answered 500 without a login, without the security
# headers, and logged an ERROR each time. Each segment of each route, literal or
# parameter, is replaced in turn by hostile segments: NUL and every other C0 control
# character, DEL, bytes that are no UTF-8, dot segments and encoded separators.
HOSTILE_SEGMENTS = ["%00", "a%00b", "%00.css", "%7f", "%ff", "%c0%ae", "%e2%80%ae", "..",
                    "%2e%2e", "%2f", "%5c", "%", "%zz", ";x", "%20", "x" * 300, "style.css%00",
                    "%f0%9f%98%80"]  # fmt: skip
CONTROLS = [f"%{code:02x}" for code in range(1, 32)]
SEGMENT_DRAWS = 6  # hostile segments per position, NUL always among them


def _filled(template: str, site: Site) -> str:
    """``template`` with every parameter given a value its route accepts."""
    for name, value in (("{inspection_id:row_id}", str(site.good[0])),
                        ("{alert_id:row_id}", str(site.dead_alert)),
                        ("{candidate_id:row_id}", "1"), ("{kind}", "image"),
                        ("{fmt}", "csv"), ("{path}", "style.css")):  # fmt: skip
        template = template.replace(name, value)
    return template


def _hostile_paths(routes: list[tuple[str, str]], site: Site, rng: random.Random
                   ) -> list[tuple[str, str]]:  # fmt: skip
    """(method, path) with one segment of a route replaced by a hostile one, for every
    segment of every route: NUL, one other control character and a draw of the rest."""
    found = []
    for method, template in routes:
        segments = _filled(template, site).split("/")[1:]
        for at in range(len(segments)):
            drawn = ["%00", rng.choice(CONTROLS), *rng.sample(HOSTILE_SEGMENTS, SEGMENT_DRAWS - 2)]
            found += [(method, "/" + "/".join([*segments[:at], hostile, *segments[at + 1 :]]))
                      for hostile in drawn]  # fmt: skip
    return found


def test_a_seeded_fuzz_of_every_path_segment_finds_no_500(
    token_server: WebServer, site: Site
) -> None:
    token_server.app.throttle.max_failures = 10**9
    rng = random.Random(SEED)
    routes = [(m, t.replace("/{kind}", "/{path}")) if t.startswith("/static") else (m, t)
              for m, t in _routes(token_server)]  # fmt: skip
    assert ("GET", "/static/{path}") in routes
    paths = _hostile_paths(routes, site, rng)
    assert len(paths) >= SEGMENT_DRAWS * len(routes)
    failures: list[str] = []
    unguarded: list[str] = []
    with capture_logs() as logs:
        for method, path in paths:
            headers = dict(BEARER) if rng.random() < 0.5 else {}  # also without a login
            body = None
            if method == "POST":
                headers["Origin"] = token_server.url
                body = b"verdict=false_alarm&reviewer=ann"
            status, answer = _send(token_server.url, method, path, headers, body)
            if status >= 500:
                failures.append(f"{status} {method} {path}")
            if answer.get("x-content-type-options") != "nosniff":
                unguarded.append(f"{status} {method} {path}")
    errors = [e for e in logs if e.get("log_level") == "error"]
    assert failures == [] and errors == [], (failures[:5], errors[:3])
    assert unguarded == [], unguarded[:5]  # every answer carries the security headers
