"""Credentials and origins as an attacker tries them, and the page behind a reverse
proxy: wrong bearer tokens throttled and logged like the login form, per client; a
cross-site login refused before it counts; ``X-Forwarded-*`` believed only from a
trusted proxy; and Debian's nginx in front of a real server, terminating TLS."""

from __future__ import annotations

import http.client
import ssl
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

import pytest
from structlog.testing import capture_logs

from padformer_edge.web.proxies import TrustedProxies
from padformer_edge.web.server import WebServer
from tests.web.certs import self_signed
from tests.web.client import Reply, request
from tests.web.conftest import TOKEN
from tests.web.nginx import PROXY_ADDRESS, nginx_proxy
from tests.web.site import Site

BEARER = {"Authorization": f"Bearer {TOKEN}"}
WRONG = {"Authorization": "Bearer wrong-token-guess-0000"}


def test_wrong_bearer_tokens_are_throttled_like_the_login_form(token_server: WebServer) -> None:
    limit = token_server.app.throttle.max_failures
    with capture_logs() as logs:
        for _ in range(limit):
            reply = request(token_server.url, "/api/live", headers=WRONG)
            assert reply.status == 401 and "bearer token is wrong" in reply.text
        right = request(token_server.url, "/api/live", headers=BEARER)
        form = request(token_server.url, "/login", method="POST",
                       body=urlencode({"token": TOKEN}).encode())  # fmt: skip
    # Past the limit even the right token waits, on either path: one throttle per client.
    assert right.status == 429 and 0 < int(right.headers["retry-after"]) <= 60
    assert "try again in" in right.text
    assert form.status == 429 and "set-cookie" not in form.headers
    failed = [e for e in logs if e["event"] == "web.login_failed"]
    assert [(e["failures"], e["via"], e["client"]) for e in failed] == [
        (n, "bearer", "127.0.0.1") for n in range(1, limit + 1)
    ]
    throttled = [e for e in logs if e["event"] == "web.login_throttled"]
    assert {e.get("via") for e in throttled} == {"bearer", None} and len(throttled) == 2


def test_a_cross_site_login_is_refused_before_it_counts(token_server: WebServer) -> None:
    foreign = {"Origin": "http://evil.example"}
    for _ in range(token_server.app.throttle.max_failures + 2):
        guess = urlencode({"token": "wrong-guess-from-elsewhere"}).encode()
        reply = request(token_server.url, "/login", method="POST", headers=foreign, body=guess)
        assert reply.status == 403 and "own page" in reply.text
    own = {"Origin": token_server.url}
    login = request(token_server.url, "/login", method="POST", headers=own,
                    body=urlencode({"token": TOKEN}).encode())  # fmt: skip
    assert login.status == 303  # the operator was never locked out by the other site
    assert token_server.app.throttle.retry_after("127.0.0.1") == 0


def test_the_client_is_the_rightmost_address_no_trusted_proxy_added() -> None:
    proxies = TrustedProxies(["10.0.0.0/8", "192.0.2.1"])
    assert proxies.client("10.1.2.3", "203.0.113.9, 10.0.0.7") == "203.0.113.9"
    # A client's own X-Forwarded-For is on the left of what the proxies added: ignored.
    assert proxies.client("192.0.2.1", "1.1.1.1, 203.0.113.9, 10.0.0.7") == "203.0.113.9"
    assert proxies.client("198.51.100.4", "1.1.1.1") == "198.51.100.4"  # not a proxy
    assert proxies.client("10.1.2.3", "not-an-address") == "10.1.2.3"
    assert proxies.client("10.1.2.3", "10.0.0.9") == "10.0.0.9"  # only proxies: the first
    assert not TrustedProxies([]).trusts("127.0.0.1")


def _through(server: WebServer, path: str, forwarded: dict[str, str], **kw: object) -> Reply:
    return request(server.url, path, headers=forwarded, **kw)  # type: ignore[arg-type]


def test_forwarded_headers_count_only_from_a_trusted_proxy(
    serve: Callable[..., WebServer], site: Site
) -> None:
    trusting = serve(token=TOKEN, trusted_proxies=["127.0.0.1"])
    plain = serve(token=TOKEN)
    limit = trusting.app.throttle.max_failures
    for _ in range(limit):
        assert (
            _through(trusting, "/api/live", {**WRONG, "X-Forwarded-For": "203.0.113.5"}).status
            == 401
        )
        assert (
            _through(plain, "/api/live", {**WRONG, "X-Forwarded-For": f"203.0.113.{_}"}).status
            == 401
        )
    # Behind the trusted proxy one client is throttled and another is not ...
    assert (
        _through(trusting, "/api/live", {**BEARER, "X-Forwarded-For": "203.0.113.5"}).status == 429
    )
    assert (
        _through(trusting, "/api/live", {**BEARER, "X-Forwarded-For": "203.0.113.6"}).status == 200
    )
    # ... while without trust a made-up X-Forwarded-For escapes nothing.
    assert _through(plain, "/api/live", {**BEARER, "X-Forwarded-For": "198.51.100.1"}).status == 429
    # Scheme and host: the cookie is Secure and the review form saves with the proxy's
    # upstream Host, only when the proxy is trusted.
    https = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "line.example",
             "X-Forwarded-For": "203.0.113.7"}  # fmt: skip
    login = _through(trusting, "/login", https, method="POST",
                     body=urlencode({"token": TOKEN}).encode())  # fmt: skip
    assert login.status == 303 and "Secure" in login.headers["set-cookie"]
    review = urlencode({"verdict": "false_alarm"}).encode()
    origin = {**BEARER, **https, "Origin": "https://line.example"}
    row = site.anomalies[0]
    path = f"/inspections/{row}/review"
    assert _through(trusting, path, origin, method="POST", body=review).status == 200
    untrusting = serve()  # no token: only the Origin check stands between a form and a save
    untrusted = {**https, "Origin": "https://line.example"}
    refused = _through(untrusting, path, untrusted, method="POST", body=review)
    assert refused.status == 403 and "own page" in refused.text


def _via_nginx(
    port: int,
    source: str,
    cert: Path,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes | None = None,
) -> http.client.HTTPResponse:
    context = ssl.create_default_context(cafile=str(cert))
    conn = http.client.HTTPSConnection("localhost", port, context=context, timeout=30,
                                       source_address=(source, 0))  # fmt: skip
    if body is not None:
        headers = {**headers, "Content-Type": "application/x-www-form-urlencoded"}
    conn.request(method, path, body=body, headers=headers)
    reply = conn.getresponse()
    reply.read()
    conn.close()
    return reply


def test_behind_nginx_clients_are_told_apart_and_forms_work(
    serve: Callable[..., WebServer], site: Site, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path / "tls")
    server = serve(token=TOKEN, trusted_proxies=[PROXY_ADDRESS])
    with nginx_proxy(server.port, cert, key, tmp_path / "nginx") as port:
        public = f"https://localhost:{port}"
        # Two clients on two addresses, both through nginx; a forged X-Forwarded-For
        # from the first is on the left of what nginx appends, so it changes nothing.
        for _ in range(server.app.throttle.max_failures):
            forged = {**WRONG, "X-Forwarded-For": "198.51.100.9"}
            assert _via_nginx(port, "127.0.0.3", cert, "GET", "/api/live", forged).status == 401
        assert _via_nginx(port, "127.0.0.3", cert, "GET", "/api/live", BEARER).status == 429
        assert _via_nginx(port, "127.0.0.4", cert, "GET", "/api/live", BEARER).status == 200
        # TLS at the proxy: a Secure cookie; the review form posts with nginx's own
        # upstream Host, and its Origin matches the forwarded host.
        login = _via_nginx(port, "127.0.0.4", cert, "POST", "/login", {"Origin": public},
                           urlencode({"token": TOKEN}).encode())  # fmt: skip
        cookie = login.getheader("set-cookie") or ""
        assert login.status == 303 and "Secure" in cookie
        jar = {"Cookie": cookie.split(";")[0], "Origin": public}
        row = site.anomalies[0]
        saved = _via_nginx(port, "127.0.0.4", cert, "POST", f"/inspections/{row}/review", jar,
                           urlencode({"verdict": "true_defect", "next": "/"}).encode())  # fmt: skip
        assert saved.status == 303
        elsewhere = {**jar, "Origin": "https://evil.example"}
        assert _via_nginx(port, "127.0.0.4", cert, "POST", f"/inspections/{row}/review",
                          elsewhere, b"verdict=false_alarm").status == 403  # fmt: skip


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "proxy.local", ""])
def test_a_trusted_proxy_must_be_an_address_or_network(entry: str) -> None:
    from pydantic import ValidationError

    from padformer_edge.web.config import HttpConfig

    with pytest.raises(ValidationError, match="is not an IP address or network"):
        HttpConfig(trusted_proxies=[entry])
