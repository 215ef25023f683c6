"""Clients that go away: a viewer closing the live stream, a browser hanging up on a
page or an export mid-way, a half-sent request. The server logs no traceback and no
error for any of them, and still answers afterwards."""

from __future__ import annotations

import logging
import socket
import struct
import time
from collections.abc import Callable

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from padformer_edge.web import protocol
from padformer_edge.web import server as server_module
from padformer_edge.web.server import WebServer
from tests.web.client import request


@pytest.fixture(params=["httptools", "h11"])
def parsed_by(
    request: pytest.FixtureRequest,
    serve: Callable[..., WebServer],
    monkeypatch: pytest.MonkeyPatch,
) -> WebServer:
    """A server parsing HTTP with httptools (the base install's) or with h11 (the
    fallback where httptools has no wheel): both must keep the deadline and stay quiet."""
    if request.param == "h11":
        monkeypatch.setattr(server_module, "head_deadline_protocol",
                            lambda: protocol.H11HeadDeadline)  # fmt: skip
    started = serve()
    expected = H11Protocol if request.param == "h11" else HttpToolsProtocol
    parser = started.server.config.http
    assert isinstance(parser, type) and issubclass(parser, expected)
    return started


def _hang_up(server: WebServer, raw: bytes, after_s: float = 0.1) -> None:
    """Send ``raw``, wait, then reset the connection (RST, as a killed browser does)."""
    conn = socket.create_connection((server.host, server.port), timeout=10)
    conn.sendall(raw)
    time.sleep(after_s)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def test_hang_ups_leave_no_traceback(
    parsed_by: WebServer, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    server = parsed_by
    caplog.set_level(logging.DEBUG)
    host = f"Host: 127.0.0.1:{server.port}\r\n"
    for path in ("/events", "/", "/history", "/history.csv", "/media/1/image"):
        _hang_up(server, f"GET {path} HTTP/1.1\r\n{host}\r\n".encode())
        _hang_up(server, f"GET {path} HTTP/1.1\r\n{host}\r\n".encode(), after_s=0.0)
    _hang_up(server, b"GET /history HTTP/1.1\r\nHo")  # gone in the middle of the headers
    _hang_up(server, f"POST /login HTTP/1.1\r\n{host}Content-Length: 100\r\n\r\nto".encode())
    time.sleep(1.5)  # the open streams notice on their next poll
    assert request(server.url, "/history").status == 200
    printed = capfd.readouterr()
    assert "Traceback" not in printed.out + printed.err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.records


def test_a_connection_that_sends_no_request_is_closed(
    parsed_by: WebServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Half-open connections (nothing, or half a request head) are dropped after the
    deadline instead of being held for good; the page keeps answering meanwhile."""
    server = parsed_by
    monkeypatch.setattr(protocol, "HEAD_TIMEOUT_S", 1.0)
    silent = [socket.create_connection((server.host, server.port), timeout=10) for _ in range(20)]
    partial = socket.create_connection((server.host, server.port), timeout=10)
    partial.sendall(b"GET /history HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    assert request(server.url, "/history").status == 200  # served alongside them
    for conn in [*silent, partial]:
        assert conn.recv(1) == b""  # closed by the server (a timeout here fails the test)
        conn.close()
    assert request(server.url, "/").status == 200
