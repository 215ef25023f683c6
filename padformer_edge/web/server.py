"""The listening socket: the standard library's threaded HTTP server around ``WebApp``.

Why not a framework: the page serves a handful of read-only routes to a few people at a
line, and the daemon's install should not grow an ASGI stack for that. One thread per
connection also suits server-sent events, which hold a connection open per viewer.
"""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.web.app import WebApp
from padformer_edge.web.config import HttpConfig, effective_token, require_token_off_loopback
from padformer_edge.web.http import Request, Response, text_response

log = get_logger("web")
MAX_BODY = 64 * 1024


def _handler_for(app: WebApp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "padformer-edge"
        sys_version = ""

        def _dispatch(self) -> None:
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                self._send(text_response(413, "request body too large."))
                return
            body = self.rfile.read(length) if length > 0 else b""
            request = Request(
                self.command,
                url.path,
                dict(parse_qsl(url.query, keep_blank_values=False)),
                {k.lower(): v for k, v in self.headers.items()},
                body,
            )
            self._send(app.handle(request))

        do_GET = do_POST = do_HEAD = do_PUT = do_DELETE = do_PATCH = _dispatch

        def _send(self, response: Response) -> None:
            self.send_response(response.status)
            self.send_header("Content-Type", response.content_type)
            for name, value in response.headers:
                self.send_header(name, value)
            if response.streaming:
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                try:
                    for chunk in response.body:  # type: ignore[union-attr]
                        self.wfile.write(chunk)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the viewer went away
                finally:
                    close = getattr(response.body, "close", None)
                    if close is not None:
                        close()
                return
            body = response.body  # type: ignore[assignment]
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)  # type: ignore[arg-type]

        def log_message(self, fmt: str, *args: object) -> None:
            log.debug("web.request", line=fmt % args)

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # an open live view must not keep a stopping process alive
    allow_reuse_address = True


class WebServer:
    """The app on ``host:port`` in a background thread; ``port`` 0 picks a free one."""

    def __init__(self, app: WebApp, host: str, port: int) -> None:
        self.app = app
        server_class = _Server
        if ":" in host:
            server_class = type("_Server6", (_Server,), {"address_family": socket.AF_INET6})
        self.httpd = server_class((host, port), _handler_for(app))
        self.host, self.port = host, self.httpd.server_address[1]
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def start(self) -> WebServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="web", daemon=True)
        self.thread.start()
        log.info("web.listening", url=self.url)
        return self

    def serve_forever(self) -> None:
        log.info("web.listening", url=self.url)
        self.httpd.serve_forever()

    def stop(self) -> None:
        self.app.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(5)


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
    )
    try:
        return WebServer(app, config.host, config.port)
    except OSError as err:
        raise UserError(
            f"cannot listen on {config.host}:{config.port} ({err.strerror}); "
            "choose another http.port (or --port) or stop what uses it."
        ) from err
