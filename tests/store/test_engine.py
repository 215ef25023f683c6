"""Where the database is, and paths that need quoting to survive SQLite's URI form."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from padformer_edge.errors import UserError
from padformer_edge.store.engine import describe, open_engine, resolve_url, sqlite_path
from padformer_edge.store.migrations import open_checked, upgrade


def test_flag_beats_environment_beats_state_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PADFORMER_EDGE_DB", raising=False)
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(tmp_path / "state"))
    assert sqlite_path(resolve_url()) == tmp_path / "state" / "results.sqlite3"
    monkeypatch.setenv("PADFORMER_EDGE_DB", str(tmp_path / "env.sqlite3"))
    assert sqlite_path(resolve_url()) == tmp_path / "env.sqlite3"
    assert sqlite_path(resolve_url(str(tmp_path / "flag.sqlite3"))) == tmp_path / "flag.sqlite3"
    pg = resolve_url("postgresql://line@db.plant/inspections")
    assert pg.drivername == "postgresql+psycopg2" and sqlite_path(pg) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u@h/db", "only sqlite and postgresql are supported"),
        ("sqlite://", "has no file"),
        ("sqlite:///:memory:", "has no file"),
    ],
)
def test_unusable_urls_are_refused_clearly(url: str, message: str) -> None:
    with pytest.raises(UserError, match=message):
        resolve_url(url)


def test_awkward_file_names_survive_the_uri_form(tmp_path: Path) -> None:
    path = tmp_path / "line 1 #2 ?50%" / "results.sqlite3"
    writer = open_engine(str(path))
    upgrade(writer)
    reader = open_checked(str(path))
    assert sqlite_path(reader.url) == path and describe(reader.url) == str(path)
    with reader.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM inspections")).scalar() == 0
    assert path.exists() and not (tmp_path / "line 1 ").exists()
