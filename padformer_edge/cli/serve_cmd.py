"""``padformer-edge serve``: the operator's page over the result store, beside a daemon.

It reads the same daemon config as ``watch`` (for the database, the folders whose
pictures may be shown and the ``http:`` section), so one file describes a line PC;
options override single values. It runs until SIGTERM or Ctrl-C. With a certificate and
key it serves HTTPS, and takes up a renewed pair by itself (``web.server``).
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import typer

from padformer_edge.daemon.settings import file_roots, load_daemon_config
from padformer_edge.errors import UserError

DB_HELP = "Database path or URL; else the config's, else $PADFORMER_EDGE_DB or the default file."


def serve(
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Daemon config (YAML); default: the bundled one."
    ),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    host: str | None = typer.Option(
        None, "--host", help="Address to bind; default http.host or 127.0.0.1."
    ),
    port: int | None = typer.Option(
        None, "--port", min=0, max=65535, help="Port; default http.port or 8080."
    ),
    roots: list[Path] = typer.Option(
        None, "--root", help="Another folder whose images may be shown (repeatable)."
    ),
    tls_cert: Path | None = typer.Option(
        None, "--tls-cert", help="PEM certificate to serve HTTPS with; default http.tls_cert."
    ),
    tls_key: Path | None = typer.Option(
        None, "--tls-key", help="Its PEM private key; default http.tls_key."
    ),
) -> None:
    """Serve the live view, history, health page and /metrics until stopped."""
    from padformer_edge.store.migrations import open_checked  # SQLAlchemy: only when run
    from padformer_edge.web.config import HttpConfig
    from padformer_edge.web.server import hand_over_sooner, make_server

    daemon = load_daemon_config(config, [])
    http = daemon.http or HttpConfig()
    given = (("host", host), ("port", port), ("tls_cert", tls_cert), ("tls_key", tls_key))
    changes = {k: v for k, v in given if v is not None}
    http = http.model_copy(update=changes)
    if (http.tls_cert is None) != (http.tls_key is None):
        raise UserError(
            "a certificate and its key go together; give both --tls-cert and --tls-key "
            "(or http.tls_cert and http.tls_key), or neither."
        )
    database = db or daemon.database
    open_checked(database)  # a missing or old database is one sentence now, not a 503 later
    server = make_server(HttpConfig.model_validate(http.model_dump()), database,
                         [*file_roots(daemon), *(roots or [])], line=daemon.line_name)  # fmt: skip
    hand_over_sooner()  # this process only serves the page
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGTERM, signal.SIGINT)}
    server.start()
    typer.echo(f"serving {server.url}")
    try:
        stop.wait()
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
