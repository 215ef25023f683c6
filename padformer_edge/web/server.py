"""The listening socket: uvicorn serving the Starlette app in a background thread.

The socket is bound here, before uvicorn starts, so a port already in use is one
sentence at start-up and ``port: 0`` reports the port it got. uvicorn runs the app on
one event loop: connections wait in a real listen backlog instead of a thread each,
page handlers run in Starlette's bounded thread pool (40 threads), a hang-up ends its
request quietly, and a connection that sends no complete request within
``protocol.HEAD_TIMEOUT_S`` is closed. There is deliberately no cap on connections
(uvicorn's ``limit_concurrency``): a few hundred idle sockets would then turn every
operator away with a 503. uvicorn's own log lines are kept to warnings; the page logs its
events through structlog.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from pathlib import Path

import uvicorn

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.web.app import asgi_app
from padformer_edge.web.config import HttpConfig, effective_token, require_token_off_loopback
from padformer_edge.web.protocol import head_deadline_protocol
from padformer_edge.web.webapp import WebApp

log = get_logger("web")
BACKLOG = 1024
KEEP_ALIVE_S = 5
GRACEFUL_STOP_S = 3
START_TIMEOUT_S = 30.0


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when the host is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # The protocol named, not left 0: asyncio switches Nagle's algorithm off (TCP_NODELAY)
    # only on connections whose socket says IPPROTO_TCP, and accepted sockets copy the
    # listener's. With Nagle on, the body written after the headers waited for the
    # client's delayed ACK: 40 ms on every keep-alive request, whatever the page cost.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class WebServer:
    """The app on ``host:port`` in a background thread; ``port`` 0 picks a free one."""

    def __init__(self, app: WebApp, host: str, port: int) -> None:
        self.app = app
        self.socket = bind(host, port)
        self.host, self.port = host, self.socket.getsockname()[1]
        config = uvicorn.Config(
            asgi_app(app),
            lifespan="off",
            log_config=None,
            log_level=logging.WARNING,
            access_log=False,
            backlog=BACKLOG,
            http=head_deadline_protocol(),
            loop="asyncio",  # Python's own loop, even where uvloop is installed
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=GRACEFUL_STOP_S,
            server_header=False,
        )
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> WebServer:
        """Serve in a thread; returns once uvicorn accepts connections."""
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="web", daemon=True
        )
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web server did not start; see the log above")
            time.sleep(0.01)
        log.info("web.listening", url=self.url)
        return self

    def stop(self) -> None:
        """End open event streams, let requests in flight finish, close the socket."""
        self.app.stopping.set()
        self.server.should_exit = True
        if self.thread is not None:
            self.thread.join(GRACEFUL_STOP_S + 5)
        self.close()

    def close(self) -> None:
        """Release the socket (also of a server that was never started)."""
        self.socket.close()


def make_server(config: HttpConfig, db: str | None, roots: list[Path]) -> WebServer:
    """A server (not yet started) for ``db`` serving files under ``roots`` + ``config.roots``.

    The token rule is checked first and a port already in use is one sentence, so
    ``serve`` and ``watch`` fail before doing anything else.
    """
    token = effective_token(config)
    require_token_off_loopback(config, token)
    app = WebApp(
        db,
        [*roots, *config.roots],
        token=token,
        host=config.host,
        live_cards=config.live_cards,
        stale_after_beats=config.stale_after_beats,
    )
    try:
        return WebServer(app, config.host, config.port)
    except OSError as err:
        raise UserError(
            f"cannot listen on {config.host}:{config.port} ({err.strerror}); "
            "choose another http.port (or --port) or stop what uses it."
        ) from err
