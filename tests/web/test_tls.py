"""HTTPS on a real server on 127.0.0.1 with a self-signed certificate: pages served over
TLS, a ``Secure`` session cookie (and none over plain HTTP), a renewed certificate taken
up by the running server without a restart, a bad pair refused in one sentence, and
``doctor``'s warning before the certificate runs out."""

from __future__ import annotations

import http.client
import shutil
import socket
import ssl
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
import yaml
from pydantic import ValidationError

from padformer_edge.daemon.settings import load_daemon_config
from padformer_edge.errors import UserError
from padformer_edge.tools.doctor import check_certificate
from padformer_edge.web.certificate import RENEW_WITHIN_DAYS, expiry
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import WebServer, make_server
from padformer_edge.web.webapp import WebApp
from tests.cli_process import run_cli
from tests.web.certs import end_date, self_signed
from tests.web.conftest import TOKEN
from tests.web.site import Site


def _get(server: WebServer, path: str, cafile: Path, method: str = "GET",
         body: bytes | None = None) -> tuple[http.client.HTTPResponse, bytes, bytes]:  # fmt: skip
    """(reply, body, the DER certificate the server showed) over HTTPS, trusting ``cafile``."""
    context = ssl.create_default_context(cafile=str(cafile))
    parts = urlsplit(server.url)
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=30)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"} if body is None else {
            "Content-Type": "application/x-www-form-urlencoded"}  # fmt: skip
        conn.request(method, path, body=body, headers=headers)
        reply = conn.getresponse()
        data = reply.read()
        shown = conn.sock.getpeercert(binary_form=True)
        return reply, data, shown
    finally:
        conn.close()


def _shown(server: WebServer) -> bytes:
    """The certificate a new connection is shown, whichever it is (not verified)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    with (
        socket.create_connection(("127.0.0.1", server.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        return tls.getpeercert(binary_form=True)


def _der(cert: Path) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.read_text())


def test_pages_are_served_over_tls_with_a_secure_cookie(
    serve: Callable[..., WebServer], tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path / "tls")
    server = serve(token=TOKEN, tls_cert=cert, tls_key=key)
    assert server.url.startswith("https://127.0.0.1:")
    reply, body, shown = _get(server, "/history", cert)
    assert reply.status == 200 and b"<table" in body and shown == _der(cert)
    login, _, _ = _get(server, "/login", cert, "POST", urlencode({"token": TOKEN}).encode())
    cookie = login.getheader("set-cookie")
    assert login.status == 303 and "Secure" in cookie and "HttpOnly" in cookie
    # Plain HTTP to the TLS port is no page.
    plain = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    with pytest.raises((http.client.HTTPException, ConnectionError)):
        plain.request("GET", "/history")
        plain.getresponse().read()
    plain.close()


def test_a_plain_http_login_cookie_is_not_secure(token_server: WebServer) -> None:
    from tests.web.client import request

    login = request(token_server.url, "/login", method="POST",
                    body=urlencode({"token": TOKEN}).encode())  # fmt: skip
    assert login.status == 303 and "secure" not in login.headers["set-cookie"].lower()


def test_a_renewed_certificate_is_taken_up_without_a_restart(site: Site, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path / "old")
    app = WebApp(site.db, site.roots, token=TOKEN)
    server = WebServer(app, "127.0.0.1", 0, tls=(cert, key), cert_poll_s=0.1).start()
    try:
        assert _get(server, "/history", cert)[2] == _der(cert)
        assert server.reload_certificate() is False  # nothing changed yet
        new_cert, new_key = self_signed(tmp_path / "new")
        shutil.copyfile(new_key, key)  # the key first: the old certificate no longer fits it
        assert server.reload_certificate() is False  # logged, the old pair serves on
        assert _get(server, "/history", cert)[2] == _der(cert)
        shutil.copyfile(new_cert, cert)
        deadline = datetime.now(UTC) + timedelta(seconds=10)
        while _shown(server) != _der(new_cert):  # the watcher's work
            assert datetime.now(UTC) < deadline, "the renewed certificate was not taken up"
        reply, body, _ = _get(server, "/history", new_cert)
        assert reply.status == 200 and b"<table" in body  # same store, same history
    finally:
        server.stop()
        app.close()


def test_a_certificate_and_a_foreign_key_are_one_sentence(
    site: Site, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PADFORMER_EDGE_HTTP_TOKEN", raising=False)
    cert, _ = self_signed(tmp_path / "a")
    _, other_key = self_signed(tmp_path / "b")
    config = HttpConfig(port=0, tls_cert=cert, tls_key=other_key)
    with pytest.raises(UserError, match=r"cannot serve HTTPS with http\.tls_cert") as err:
        make_server(config, site.db, site.roots)
    assert "\n" not in str(err.value) and "matching private key" in str(err.value)
    with pytest.raises(ValidationError, match="tls_cert and tls_key go together"):
        HttpConfig(tls_cert=cert)


def test_serve_with_a_certificate_but_no_key_is_one_sentence(site: Site, tmp_path: Path) -> None:
    cert, _ = self_signed(tmp_path / "tls")
    result = run_cli("serve", "--db", site.db, "--port", "0", "--tls-cert", str(cert))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "give both --tls-cert and --tls-key" in lines[0], lines


def test_the_expiry_is_read_as_openssl_reads_it(tmp_path: Path) -> None:
    for days in (1, 400, 9000):  # 9000 days ends after 2049: a GeneralizedTime
        cert, _ = self_signed(tmp_path / str(days), days=days)
        seen = datetime.strptime(end_date(cert), "%b %d %H:%M:%S %Y %Z").replace(tzinfo=UTC)
        assert expiry(cert) == seen
    bad = tmp_path / "bad.crt"
    bad.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(UserError, match=f"certificate {bad} cannot be read"):
        expiry(bad)


def test_doctor_warns_before_the_certificate_expires(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path / "tls", days=30)
    camera = tmp_path / "cam"
    camera.mkdir()
    path = tmp_path / "daemon.yaml"
    path.write_text(yaml.safe_dump({
        "cameras": [{"name": "a", "path": str(camera), "profile": "p"}],
        "http": {"tls_cert": str(cert), "tls_key": str(key)},
    }))  # fmt: skip
    config = load_daemon_config(path, [])
    ends = expiry(cert)
    (fine,) = check_certificate(config)
    assert fine.ok and fine.subject == "certificate" and "valid until" in fine.detail
    soon = ends - timedelta(days=RENEW_WITHIN_DAYS - 1, hours=1)
    (warned,) = check_certificate(config, now=soon)
    assert not warned.ok and f"expires in {RENEW_WITHIN_DAYS - 1} day(s)" in warned.detail
    (expired,) = check_certificate(config, now=ends + timedelta(seconds=1))
    assert not expired.ok and "expired on" in expired.detail
    assert list(check_certificate(config.model_copy(update={"http": None}))) == []
