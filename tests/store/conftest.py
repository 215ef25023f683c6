"""Fixtures for the result-store tests: a migrated database on every configured backend.

SQLite always runs (a real file in the test's temp dir). PostgreSQL runs too when
``PADFORMER_EDGE_TEST_PG_URL`` names a database the tests may wipe; without it those
cases are skipped with that reason printed by ``-ra``, or fail in CI (``CI=true``), where
``.ci/run`` starts a PostgreSQL server and sets the variable.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, make_url, text

from padformer_edge.store.engine import open_engine, resolve_url
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.models import Base
from tests.services import postgres_driver_or_missing, service_missing

PG_ENV = "PADFORMER_EDGE_TEST_PG_URL"


@functools.cache
def worker_database(url: str) -> str:
    """The URL of this test worker's own database on the server ``url`` names.

    The suite runs in several pytest-xdist workers, and every PostgreSQL case wipes its
    database before and after; two workers sharing one would wipe each other's tables
    mid-test. Each worker gets ``<database>_<worker>``, created on first use (the test
    cluster's role may create databases) once per process; outside xdist the URL is used
    as given."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return url
    parsed = make_url(url)
    name = f"{parsed.database}_{worker}"
    admin = create_engine(resolve_url(url), isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": name}
            ).first()
            if not exists:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        admin.dispose()
    return parsed.set(database=name).render_as_string(hide_password=False)


def _wipe_postgres(url: str) -> None:
    engine = open_engine(url)
    with engine.begin() as conn:
        Base.metadata.drop_all(conn)
        conn.execute(text("DROP TABLE IF EXISTS alembic_version"))
    engine.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A URL of an empty database: a new SQLite file, or the wiped test PostgreSQL."""
    if request.param == "sqlite":
        yield str(tmp_path / "results.sqlite3")
        return
    url = os.environ.get(PG_ENV)
    if not url:
        service_missing(
            f"{PG_ENV} is not set; set it to a throw-away PostgreSQL database URL "
            "to run the store suite against PostgreSQL"
        )
    postgres_driver_or_missing()
    url = worker_database(url)
    _wipe_postgres(url)
    yield url
    _wipe_postgres(url)


@pytest.fixture
def engine(db_url: str) -> Iterator[Engine]:
    """A writer engine on a database migrated to head."""
    writer = open_engine(db_url)
    upgrade(writer)
    yield writer
    writer.dispose()
