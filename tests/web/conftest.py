"""Fixtures for the web tests: a seeded store on every configured backend, and a real
server on 127.0.0.1 in a thread, stopped after each test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import upgrade
from padformer_edge.web.config import HttpConfig
from padformer_edge.web.server import WebServer, make_server
from tests.store.conftest import db_url  # noqa: F401  (the sqlite/postgresql parameter)
from tests.web.site import Site, build_site

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture
def site(db_url: str, tmp_path: Path) -> Iterator[Site]:  # noqa: F811
    engine = open_engine(db_url)
    upgrade(engine)
    yield build_site(engine, db_url, tmp_path)
    engine.dispose()


@pytest.fixture
def serve(
    site: Site, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Callable[..., WebServer]]:
    """Start a server over ``site`` with the given ``http:`` settings (on the PC of
    ``line``, default this host's, as the site's rows are); all stop at the end."""
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("PADFORMER_EDGE_HTTP_TOKEN", raising=False)
    started: list[WebServer] = []

    def start(line: str | None = None, **http: object) -> WebServer:
        config = HttpConfig(port=0, **http)  # type: ignore[arg-type]
        server = make_server(config, site.db, site.roots, line=line).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()
        server.app.close()


@pytest.fixture
def server(serve: Callable[..., WebServer]) -> WebServer:
    return serve()


@pytest.fixture
def token_server(serve: Callable[..., WebServer]) -> WebServer:
    return serve(token=TOKEN)
