"""Debian's nginx as the reverse proxy in front of a test server: TLS at the proxy, the
upstream reached from 127.0.0.2 (so that address, and only it, can be the trusted
proxy while clients connect from other loopback addresses), and the ``X-Forwarded-*``
headers set as docs/deploy.md tells an operator to set them.

Without nginx these tests skip, except under CI (``CI=true``), where they fail:
``.ci/run`` installs nginx as it installs chromium.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

NGINX = Path("/usr/sbin/nginx")
PROXY_ADDRESS = "127.0.0.2"
START_TIMEOUT_S = 20.0

CONFIG = """
daemon off;
worker_processes 1;
pid {run}/nginx.pid;
error_log {run}/error.log warn;
events {{ worker_connections 64; }}
http {{
    access_log off;
    client_body_temp_path {run}/body;
    proxy_temp_path {run}/proxy;
    fastcgi_temp_path {run}/fastcgi;
    uwsgi_temp_path {run}/uwsgi;
    scgi_temp_path {run}/scgi;
    server {{
        listen 127.0.0.1:{port} ssl;
        server_name localhost;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        location / {{
            proxy_pass http://127.0.0.1:{upstream};
            proxy_bind {proxy};
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_buffering off;
        }}
    }}
}}
"""


def nginx_or_skip() -> Path:
    """The nginx binary, or a skip (a failure under CI) naming how to install it."""
    if NGINX.is_file():
        return NGINX
    reason = f"{NGINX} is missing; install it with 'apt-get install nginx'"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; under CI the proxy tests must run (.ci/run installs it)")
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def nginx_proxy(upstream: int, cert: Path, key: Path, run: Path) -> Iterator[int]:
    """nginx terminating TLS on a free port in front of ``127.0.0.1:upstream``; yields the
    port, stops nginx at the end."""
    binary = nginx_or_skip()
    run.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    conf = run / "nginx.conf"
    conf.write_text(CONFIG.format(run=run, port=port, cert=cert, key=key, upstream=upstream,
                                  proxy=PROXY_ADDRESS))  # fmt: skip
    process = subprocess.Popen(
        [str(binary), "-p", str(run), "-c", str(conf)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    log = (run / "error.log").read_text() if (run / "error.log").exists() else ""
                    raise RuntimeError(f"nginx did not start: {log}") from None
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        process.wait(10)
        shutil.rmtree(run, ignore_errors=True)
