"""The attacks the issue names, each against a real server on 127.0.0.1: a request
without the token, ``../`` and absolute paths, an HTML file name; plus the Host check,
the single write endpoint and the token rule for binding beyond this machine."""

from __future__ import annotations

import asyncio
from urllib.parse import quote

import pytest
from markupsafe import escape
from sqlalchemy import select
from starlette.types import Message, Receive, Scope, Send
from structlog.testing import capture_logs

from padformer_edge.errors import UserError
from padformer_edge.store.engine import open_engine
from padformer_edge.store.models import Alert, AlertState
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.middleware import Headers
from padformer_edge.web.server import WebServer, make_server
from tests.cli_process import run_cli
from tests.web.client import request
from tests.web.conftest import TOKEN
from tests.web.site import HOSTILE_CAMERA, HOSTILE_NAME, Site

BEARER = {"Authorization": f"Bearer {TOKEN}"}
PAGES = ["/", "/history", "/health", "/metrics", "/api/live", "/events", "/history.csv",
         "/inspections/1", "/media/1/image", "/media/1/heatmap"]  # fmt: skip


@pytest.mark.parametrize("path", PAGES)
def test_a_request_without_the_token_is_refused(token_server: WebServer, path: str) -> None:
    assert request(token_server.url, path).status == 401
    wrong = {"Authorization": "Bearer " + TOKEN[:-1] + "x"}
    assert request(token_server.url, path, headers=wrong).status == 401
    assert request(token_server.url, path, headers={"Cookie": "padformer_token=nope"}).status == 401


def test_the_token_opens_every_page_by_header_or_login_cookie(token_server: WebServer) -> None:
    url = token_server.url
    for path in ("/", "/history", "/health", "/metrics", "/inspections/1", "/media/1/image"):
        assert request(url, path, headers=BEARER).status == 200, path
    assert request(url, "/login", method="POST", body=b"token=wrong").status == 401
    login = request(url, "/login", method="POST", body=f"token={TOKEN}&next=/history".encode())
    assert login.status == 303 and login.headers["location"] == "/history"
    cookie = login.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    jar = cookie.split(";")[0]
    assert request(url, "/history", headers={"Cookie": jar}).status == 200
    # The login form sends nobody to another site afterwards.
    elsewhere = request(url, "/login", method="POST",
                        body=f"token={TOKEN}&next=//evil.example/".encode())  # fmt: skip
    assert elsewhere.headers["location"] == "/"


def test_a_browser_without_the_token_gets_the_login_form(token_server: WebServer) -> None:
    reply = request(token_server.url, "/history", headers={"Accept": "text/html"})
    assert reply.status == 401 and 'action="/login"' in reply.text


def test_binding_beyond_loopback_needs_a_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PADFORMER_EDGE_HTTP_TOKEN", raising=False)
    with pytest.raises(UserError, match="without a token"):
        make_server(HttpConfig(host="0.0.0.0", port=0), None, [])
    monkeypatch.setenv("PADFORMER_EDGE_HTTP_TOKEN", TOKEN)
    server = make_server(HttpConfig(host="0.0.0.0", port=0), None, [])
    assert server.app.token == TOKEN
    server.close()
    monkeypatch.setenv("PADFORMER_EDGE_HTTP_TOKEN", "short")
    with pytest.raises(UserError, match="shorter than 16"):
        make_server(HttpConfig(port=0), None, [])


def test_serve_refuses_a_public_bind_without_a_token_in_one_line(site: Site) -> None:
    result = run_cli("serve", "--db", site.db, "--host", "0.0.0.0", "--port", "0",
                     env={"PADFORMER_EDGE_HTTP_TOKEN": ""})  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "without a token" in lines[0] and "127.0.0.1" in lines[0]


def test_a_foreign_host_header_is_refused_on_a_loopback_bind(server: WebServer) -> None:
    """DNS rebinding: a page elsewhere resolving its own name to 127.0.0.1."""
    assert request(server.url, "/", headers={"Host": "evil.example"}).status == 421
    assert request(server.url, "/", headers={"Host": f"localhost:{server.port}"}).status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/media/../../etc/passwd",
        "/media/1/../../../etc/passwd",
        "/media/1/image/../../../../etc/passwd",
        "/media/%2e%2e/%2e%2e/etc/passwd",
        "/media//etc/passwd",
        "/media/" + quote("/etc/passwd", safe=""),
        "/static/../app.py",
        "/static/..%2fapp.py",
        "/static/%2Fetc%2Fpasswd",
        "//etc/passwd",
        "/etc/passwd",
    ],
)
def test_paths_in_the_url_never_reach_the_file_system(server: WebServer, path: str) -> None:
    reply = request(server.url, path)
    assert reply.status == 404
    assert b"root:" not in reply.body


@pytest.mark.parametrize("kind", ["outside", "dotdot", "symlink", "relative"])
def test_recorded_paths_outside_the_roots_are_not_served(
    server: WebServer, site: Site, kind: str
) -> None:
    """An absolute path elsewhere, a ``../`` climb, a link out and a relative path, all
    recorded in the store itself, are refused; the same picture inside a root is served."""
    assert request(server.url, f"/media/{site.hostile[kind]}/image").status == 404
    inside = request(server.url, f"/media/{site.good[0]}/image")
    assert inside.status == 200 and inside.headers["content-type"] == "image/png"
    assert inside.body.startswith(b"\x89PNG")


def test_an_html_file_is_never_served(server: WebServer, site: Site) -> None:
    reply = request(server.url, f"/media/{site.hostile['html']}/image")
    assert reply.status == 404
    assert b"<script>" not in reply.body
    assert reply.headers["content-type"].startswith("text/plain")
    assert reply.headers["x-content-type-options"] == "nosniff"


def test_an_html_file_name_and_camera_name_are_escaped_everywhere(
    server: WebServer, site: Site
) -> None:
    row = site.hostile["markup"]
    pages = ["/", "/history", f"/inspections/{row}", f"/history?camera={quote(HOSTILE_CAMERA)}"]
    for path in pages:
        page = request(server.url, path).text
        assert "<img src=x" not in page and "<script>alert" not in page, path
    detail = request(server.url, f"/inspections/{row}").text
    assert str(escape(HOSTILE_NAME)) in detail
    assert str(escape(HOSTILE_CAMERA)) in detail
    # The file itself is an image under a root, so it is shown, as an image.
    picture = request(server.url, f"/media/{row}/image")
    assert picture.status == 200 and picture.headers["content-type"] == "image/png"


def test_every_response_forbids_inline_script_and_framing(server: WebServer) -> None:
    for path in ("/", "/nope", "/media/1/image"):
        headers = request(server.url, path).headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"


def test_an_unhandled_failure_is_a_500_with_the_headers_logged_once() -> None:
    """Defence in depth behind issue 51's ``/static/%00``: whatever escapes the routes is
    answered inside ``Headers``, so even a 500 forbids inline script and framing."""

    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("a bug")

    async def half_sent(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        raise RuntimeError("a bug after the head")

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope: Scope = {"type": "http", "method": "GET", "path": "/x", "headers": []}
    with capture_logs() as logs:
        asyncio.run(Headers(broken)(scope, receive, send))
    start = sent[0]
    headers = {k.decode(): v.decode() for k, v in start["headers"]}
    assert start["status"] == 500 and headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in headers["content-security-policy"]
    assert sent[1]["body"] == b"internal error; the server log has details.\n"
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["web.error"]
    sent.clear()
    with pytest.raises(RuntimeError, match="after the head"):  # nothing left to answer with
        asyncio.run(Headers(half_sent)(scope, receive, send))
    assert [m["status"] for m in sent] == [200]


def _state(site: Site, alert_id: int) -> AlertState:
    engine = open_engine(site.db)
    try:
        with engine.connect() as conn:
            return conn.execute(select(Alert.state).where(Alert.id == alert_id)).scalar_one()
    finally:
        engine.dispose()


def test_retry_alert_needs_the_token_and_the_pages_own_origin(
    server: WebServer, token_server: WebServer, site: Site
) -> None:
    dead = site.dead_alert
    assert _state(site, dead) is AlertState.dead
    for path in ("/history", "/", "/inspections/1", "/health"):
        assert request(server.url, path, method="POST", body=b"").status == 405
        assert request(token_server.url, path, method="PUT", headers=BEARER).status == 405
    assert request(server.url, f"/alerts/{dead}/retry", method="GET").status == 405
    # No token configured: retrying is switched off.
    assert request(server.url, f"/alerts/{dead}/retry", method="POST", body=b"").status == 403
    # A token, but the request comes from another site's page (cross-site form post).
    origin = {**BEARER, "Origin": "http://evil.example"}
    retry = f"/alerts/{dead}/retry"
    assert request(token_server.url, retry, method="POST", headers=origin, body=b"").status == 403
    assert request(token_server.url, retry, method="POST", body=b"").status == 401
    assert _state(site, dead) is AlertState.dead
    own = {**BEARER, "Origin": token_server.url}
    done = request(token_server.url, retry, method="POST", headers=own, body=b"next=/health")
    assert done.status == 303 and done.headers["location"] == "/health"
    assert _state(site, dead) is AlertState.pending
    sent = request(token_server.url, f"/alerts/{site.sent_alert}/retry", method="POST",
                   headers=BEARER, body=b"")  # fmt: skip
    assert sent.status == 400 and "already sent" in sent.text
    assert _state(site, site.sent_alert) is AlertState.sent
