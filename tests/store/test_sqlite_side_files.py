"""A read-only reader leaves a WAL database's ``-wal`` and ``-shm`` beside it (it may not
delete them); ``fold_sqlite_journal`` lets SQLite fold the log in and remove both, as the
demo does before it hands its folder over (issue 51)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from padformer_edge.store.engine import fold_sqlite_journal, open_engine


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_folding_leaves_the_database_alone_with_its_rows(sqlite_file: Path) -> None:
    reader = open_engine(str(sqlite_file), read_only=True)
    with reader.connect() as conn:
        before = conn.execute(text("SELECT count(*) FROM inspections")).scalar()
    reader.dispose()
    assert _names(sqlite_file.parent) == [
        "results.sqlite3", "results.sqlite3-shm", "results.sqlite3-wal"
    ]  # fmt: skip
    fold_sqlite_journal(sqlite_file)
    assert _names(sqlite_file.parent) == ["results.sqlite3"]
    reader = open_engine(str(sqlite_file), read_only=True)
    with reader.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM inspections")).scalar() == before
    reader.dispose()
    fold_sqlite_journal(sqlite_file.parent / "absent.sqlite3")  # nothing there: nothing made
    assert "absent.sqlite3" not in _names(sqlite_file.parent)
