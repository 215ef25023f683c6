"""How the server treats a connection: every accepted one has Nagle's algorithm off, so
a response's body never waits for the client's delayed ACK of its headers."""

from __future__ import annotations

import http.client
import socket

from padformer_edge.web.server import WebServer


def test_accepted_connections_send_without_waiting_for_acks(server: WebServer) -> None:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=10)
    try:
        for _ in range(2):  # a keep-alive connection, as a browser uses for a page
            conn.request("GET", "/static/style.css")
            reply = conn.getresponse()
            assert reply.status == 200 and reply.read()
        accepted = [c.transport.get_extra_info("socket")
                    for c in server.server.server_state.connections]  # fmt: skip
        assert accepted, "the server holds no open connection"
        for sock in accepted:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        conn.close()
