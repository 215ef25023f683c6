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

With ``http.tls_cert`` and ``http.tls_key`` uvicorn serves HTTPS (its ``ssl_certfile`` and
``ssl_keyfile``). A renewed certificate is taken up without a restart: a thread looks at
the two files every ``CERT_POLL_S`` and, when either changed, loads the new pair into a
fresh ``SSLContext``; the listening context's SNI callback, which OpenSSL calls at every
handshake, hands each new connection the newest context that loaded. Open connections
keep theirs, and nothing of the daemon (its queue, history, alerts) is touched. A pair
that does not load (a key written before its certificate, say) is logged and tried again
at the next look, the last good pair serving meanwhile; it is never half-loaded into
the context that serves. uvicorn's own proxy-header handling is off: the
``X-Forwarded-*`` headers are believed only from ``http.trusted_proxies`` (``proxies``).
"""

from __future__ import annotations

import logging
import socket
import ssl
import sys
import threading
import time
from pathlib import Path

import uvicorn

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.web.asgi import asgi_app
from padformer_edge.web.config import HttpConfig, effective_token, require_token_off_loopback
from padformer_edge.web.protocol import head_deadline_protocol
from padformer_edge.web.webapp import WebApp

log = get_logger("web")
BACKLOG = 1024
KEEP_ALIVE_S = 5
GRACEFUL_STOP_S = 3
START_TIMEOUT_S = 30.0
CERT_POLL_S = 60.0
# How long a thread may hold the interpreter lock while another asks for it, in a process
# that only serves the page (``serve``); Python's default is 5 ms.
SWITCH_INTERVAL_S = 0.0005


def hand_over_sooner() -> None:
    """Make a thread running Python hand the interpreter lock over after
    ``SWITCH_INTERVAL_S`` instead of 5 ms, for a process whose only work is this server.

    The event loop answers kept pages itself while worker threads render others; each
    time it waits for the network it gives the lock up, and a render running pure Python
    kept it until the interval ran out. A request takes the loop several turns (accept,
    read, answer), so under a burst of viewers a kept page waited 5 ms a turn behind
    renders: 50 to 80 ms for a page ready in memory. Handing over after half a
    millisecond costs the renders a few more switches and the kept pages nothing.
    ``watch`` leaves its process's interval alone: the daemon's threads share it.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def _stamp(paths: tuple[Path, Path]) -> tuple[int, ...]:
    """The files' modification times and sizes: what changes when a certificate is renewed."""
    stamp: list[int] = []
    for path in paths:
        info = path.stat()
        stamp += [info.st_mtime_ns, info.st_size]
    return tuple(stamp)


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

    def __init__(
        self,
        app: WebApp,
        host: str,
        port: int,
        *,
        tls: tuple[Path, Path] | None = None,
        cert_poll_s: float = CERT_POLL_S,
    ) -> None:
        self.app = app
        self.tls = tls
        self.cert_poll_s = cert_poll_s
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
            proxy_headers=False,  # the trusted proxies are ``proxies``' business
            ssl_certfile=str(tls[0]) if tls else None,
            ssl_keyfile=str(tls[1]) if tls else None,
        )
        self._serving: ssl.SSLContext | None = None
        if tls is not None:
            config.load()  # builds the SSLContext now: a bad pair is one sentence at start
            assert config.ssl is not None
            self._serving = config.ssl
            self._cert_stamp = _stamp(tls)
            config.ssl.sni_callback = self._hand_newest
        self.socket = bind(host, port)
        self.host, self.port = host, self.socket.getsockname()[1]
        self.server = uvicorn.Server(config)
        self.thread: threading.Thread | None = None
        self._watcher: threading.Thread | None = None

    def _hand_newest(self, conn: ssl.SSLObject, _name: str | None, _ctx: ssl.SSLContext) -> None:
        """At each handshake: serve the newest certificate that loaded."""
        serving = self._serving
        if serving is not None and conn.context is not serving:
            conn.context = serving

    def reload_certificate(self) -> bool:
        """Load the certificate and key again if either file changed; True if a new pair
        now serves new connections. A pair that does not load is logged, the old one kept."""
        if self.tls is None:
            return False
        cert, key = self.tls
        try:
            stamp = _stamp(self.tls)
            if stamp == self._cert_stamp:
                return False
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(str(cert), str(key))
        except (OSError, ssl.SSLError) as err:
            log.error("web.certificate_not_loaded", cert=str(cert),
                      error=f"{type(err).__name__}: {err}")  # fmt: skip
            return False
        self._serving, self._cert_stamp = context, stamp
        log.info("web.certificate_reloaded", cert=str(cert))
        return True

    def _watch_certificate(self) -> None:
        while not self.app.stopping.wait(self.cert_poll_s):
            self.reload_certificate()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

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
        if self.tls is not None:
            self._watcher = threading.Thread(
                target=self._watch_certificate, name="web-certificate", daemon=True
            )
            self._watcher.start()
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


def make_server(
    config: HttpConfig, db: str | None, roots: list[Path], line: str | None = None
) -> WebServer:
    """A server (not yet started) for ``db`` serving files under ``roots`` + ``config.roots``,
    on the PC of ``line`` (the daemon config's ``line_name``; default: this host's name,
    as the daemon's).

    The token rule is checked first and a port already in use is one sentence, so
    ``serve`` and ``watch`` fail before doing anything else.
    """
    token = effective_token(config)
    require_token_off_loopback(config, token)
    tls = (config.tls_cert, config.tls_key) if config.tls_cert and config.tls_key else None
    app = WebApp(
        db,
        [*roots, *config.roots],
        token=token,
        host=config.host,
        live_cards=config.live_cards,
        stale_after_beats=config.stale_after_beats,
        trusted_proxies=config.trusted_proxies,
        line_urls=config.line_urls,
        line=line,
    )
    try:
        return WebServer(app, config.host, config.port, tls=tls)
    except (ssl.SSLError, FileNotFoundError, IsADirectoryError, PermissionError) as err:
        raise UserError(
            f"cannot serve HTTPS with http.tls_cert {config.tls_cert} and http.tls_key "
            f"{config.tls_key} ({type(err).__name__}: {err}); give a PEM certificate and "
            "its matching private key."
        ) from err
    except OSError as err:
        raise UserError(
            f"cannot listen on {config.host}:{config.port} ({err.strerror}); "
            "choose another http.port (or --port) or stop what uses it."
        ) from err
