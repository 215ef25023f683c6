"""Logging in to a page with a token, against a real server on 127.0.0.1: the cookie is
a signed random session id (never the token), logout closes it on the server, repeated
failures are throttled per client and logged, and ``next`` only ever leads to a path on
this site, whatever a crafted form sends (header injection, other hosts, tab tricks)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest
from structlog.testing import capture_logs

from padformer_edge.web.auth import safe_next
from padformer_edge.web.server import WebServer
from padformer_edge.web.sessions import COOKIE, Sessions
from padformer_edge.web.throttle import LoginThrottle
from tests.web.client import Reply, request
from tests.web.conftest import TOKEN


def _login(server: WebServer, token: str, target: str = "/history") -> Reply:
    body = urlencode({"token": token, "next": target}).encode()
    return request(server.url, "/login", method="POST", body=body)


def _cookie(reply: Reply) -> str:
    """``padformer_session=VALUE`` from a Set-Cookie header."""
    return reply.headers["set-cookie"].split(";")[0]


def test_the_session_cookie_is_a_signed_id_not_the_token(token_server: WebServer) -> None:
    first, second = _login(token_server, TOKEN), _login(token_server, TOKEN)
    assert first.status == 303 and first.headers["location"] == "/history"
    jar = _cookie(first)
    name, value = jar.split("=", 1)
    assert name == COOKIE
    assert TOKEN not in first.headers["set-cookie"] and TOKEN not in value
    assert value != _cookie(second).split("=", 1)[1]  # a fresh random id per login
    assert request(token_server.url, "/history", headers={"Cookie": jar}).status == 200
    # One character changed, or an id signed by another key: the signature fails. The
    # first character of the signature, not its last: in unpadded base64 the last one also
    # carries unused bits, and changing only those leaves the decoded signature as it was.
    at = value.rindex(".") + 1
    flipped = value[:at] + ("A" if value[at] != "A" else "B") + value[at + 1 :]
    for forged in (flipped, Sessions().open(), TOKEN):
        reply = request(token_server.url, "/history", headers={"Cookie": f"{COOKIE}={forged}"})
        assert reply.status == 401, forged


def test_logout_closes_the_session_on_the_server(token_server: WebServer) -> None:
    jar = _cookie(_login(token_server, TOKEN))
    page = request(token_server.url, "/history", headers={"Cookie": jar, "Accept": "text/html"})
    assert 'action="/logout"' in page.text
    # Another site's form cannot log the operator out (nor in a loop).
    foreign = {"Cookie": jar, "Origin": "http://evil.example"}
    assert request(token_server.url, "/logout", method="POST", headers=foreign,
                   body=b"").status == 403  # fmt: skip
    assert request(token_server.url, "/history", headers={"Cookie": jar}).status == 200
    own = {"Cookie": jar, "Origin": token_server.url}
    out = request(token_server.url, "/logout", method="POST", headers=own, body=b"")
    assert out.status == 303 and out.headers["location"] == "/login"
    cleared = out.headers["set-cookie"]
    assert cleared.startswith(f"{COOKIE}=") and ("Max-Age=0" in cleared or "expires=" in cleared)
    # The old cookie, replayed after logout, opens nothing.
    assert request(token_server.url, "/history", headers={"Cookie": jar}).status == 401
    assert request(token_server.url, "/logout", method="GET").status == 401  # POST only


def test_repeated_failures_are_throttled_per_client_and_logged(token_server: WebServer) -> None:
    limit = token_server.app.throttle.max_failures
    with capture_logs() as logs:
        for _ in range(limit):
            assert _login(token_server, "wrong-token-guess-000").status == 401
        throttled = _login(token_server, TOKEN)  # even the right token waits now
    assert throttled.status == 429 and "set-cookie" not in throttled.headers
    assert 0 < int(throttled.headers["retry-after"]) <= token_server.app.throttle.window_s
    assert "Too many failed logins" in throttled.text
    failed = [e for e in logs if e["event"] == "web.login_failed"]
    assert [e["failures"] for e in failed] == list(range(1, limit + 1))
    assert {e["client"] for e in failed} == {"127.0.0.1"}
    assert any(e["event"] == "web.login_throttled" for e in logs)
    assert TOKEN not in repr(logs) and "wrong-token-guess-000" not in repr(logs)


def test_the_throttle_counts_per_client_and_forgets_after_its_window() -> None:
    now = [0.0]
    throttle = LoginThrottle(max_failures=3, window_s=60.0, clock=lambda: now[0])
    for second in (0.0, 10.0, 20.0):
        now[0] = second
        assert throttle.retry_after("10.0.0.1") == 0.0
        throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == 40.0  # until the first failure is 60 s old
    assert throttle.retry_after("10.0.0.2") == 0.0  # another client is not held up
    now[0] = 60.0
    assert throttle.retry_after("10.0.0.1") == 0.0  # one failure aged out: one more try
    assert throttle.failed("10.0.0.1") == 3
    assert throttle.retry_after("10.0.0.1") == 10.0


def test_a_session_expires_and_the_book_is_bounded() -> None:
    now = [0.0]
    book = Sessions(max_age_s=100.0, max_sessions=2, clock=lambda: now[0])
    first, second = book.open(), book.open()
    assert book.valid(first) and book.valid(second)
    third = book.open()  # the oldest login is dropped
    assert not book.valid(first) and book.valid(third)
    now[0] = 100.0
    assert not book.valid(second)
    assert not book.valid(None) and not book.valid("") and not book.valid("not.signed")


OFF_SITE = [
    "//evil.example/",
    "https://evil.example/",
    "http:evil.example",
    "/\\evil.example",
    "/\t/evil.example",
    "/\r\nSet-Cookie: injected=1",
    "/ /evil.example",
    "javascript:alert(1)",
    "evil.example",
    "",
]


@pytest.mark.parametrize("target", OFF_SITE)
def test_next_never_leaves_the_site(token_server: WebServer, target: str) -> None:
    assert safe_next(target) == "/"
    reply = _login(token_server, TOKEN, target)
    assert reply.status == 303 and reply.headers["location"] == "/"
    assert "injected" not in repr(reply.headers)


def test_a_crlf_in_next_sets_no_header(server: WebServer) -> None:
    """The issue's reproduction, on the default tokenless server: the encoded line
    break in ``next`` must not reach the response headers."""
    body = b"next=/%0D%0ASet-Cookie:%20injected=1"
    reply = request(server.url, "/login", method="POST", body=body)
    assert reply.status == 303 and reply.headers["location"] == "/"
    assert "set-cookie" not in reply.headers


def test_next_keeps_a_path_and_query_on_this_site(token_server: WebServer) -> None:
    target = "/history?camera=cam-a&verdict=anomaly"
    assert _login(token_server, TOKEN, target).headers["location"] == target
    form = request(token_server.url, "/login?next=" + quote("//evil.example"))
    assert 'name="next" value="/"' in form.text


def test_an_oversized_form_is_refused_in_one_sentence(token_server: WebServer) -> None:
    body = b"token=" + b"x" * (70 * 1024)
    reply = request(token_server.url, "/login", method="POST", body=body)
    assert reply.status == 413 and "larger than 64 KiB" in reply.text
    assert "set-cookie" not in reply.headers
