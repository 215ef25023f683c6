"""Schema versions: upgrade and downgrade, models agree with head, migrate-on-start."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from filelock import FileLock, Timeout
from sqlalchemy import Engine, inspect, text

from padformer_edge.errors import UserError
from padformer_edge.store import migrations
from padformer_edge.store.engine import open_engine
from padformer_edge.store.migrations import (
    current_revision,
    head_revision,
    migrate_on_start,
    open_checked,
    upgrade,
)
from padformer_edge.store.models import Base, ReviewVerdict
from padformer_edge.store.queue import enqueue
from padformer_edge.store.reviews import save_review
from tests.cli_process import run_cli
from tests.pg_cluster import own_cluster

from .seed import digest

TABLES = {"inspections", "alerts", "daemon_heartbeat", "reviews"}


def test_upgrade_empty_to_head_and_downgrade_back(db_url: str) -> None:
    engine = open_engine(db_url)
    assert current_revision(engine) is None
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    assert set(inspect(engine).get_table_names()) >= TABLES
    migrations.downgrade(engine, "base")
    assert current_revision(engine) is None
    assert not TABLES & set(inspect(engine).get_table_names())
    upgrade(engine)  # and up again: downgrade left nothing behind that blocks it
    assert current_revision(engine) == head_revision()


def test_models_and_head_schema_agree(db_url: str) -> None:
    engine = open_engine(db_url)
    upgrade(engine)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        assert compare_metadata(context, Base.metadata) == []


def test_sqlite_connections_carry_the_durability_settings(sqlite_file: Path) -> None:
    engine = open_engine(str(sqlite_file))
    with engine.connect() as conn:
        pragma = {
            name: conn.execute(text(f"PRAGMA {name}")).scalar()
            for name in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")
        }
    assert pragma == {
        "journal_mode": "wal",
        "synchronous": 2,
        "foreign_keys": 1,
        "busy_timeout": 30_000,
    }


def test_readers_cannot_write(sqlite_file: Path) -> None:
    reader = open_checked(str(sqlite_file))
    with pytest.raises(Exception, match="readonly"), reader.begin() as conn:
        conn.execute(text("DELETE FROM inspections"))


def test_readers_refuse_a_database_without_schema(tmp_path: Path) -> None:
    path = tmp_path / "empty.sqlite3"
    with open_engine(str(path)).connect():  # the file exists, with no schema in it
        pass
    with pytest.raises(UserError, match="db upgrade"):
        open_checked(str(path))
    with pytest.raises(UserError, match="no database"):
        open_checked(str(tmp_path / "missing.sqlite3"))


def test_the_head_read_from_the_revision_files_is_alembics(db_url: str) -> None:
    """The check reads ``revision``/``down_revision`` itself, without Alembic; Alembic,
    which runs the same files, must agree on the chain, the head and the stamp."""
    script = ScriptDirectory.from_config(migrations.alembic_config())
    assert head_revision() == script.get_current_head()
    assert migrations.revision_chain() == {
        r.revision: tuple(r._versioned_down_revisions) for r in script.walk_revisions()
    }
    engine = open_engine(db_url)
    for revision in ["base", *sorted(migrations.revision_chain())]:
        if revision != "base":
            upgrade(engine, revision)
        with engine.connect() as conn:
            stamped = MigrationContext.configure(conn).get_current_revision()
        assert current_revision(engine) == stamped


def test_readers_refuse_a_schema_behind_or_ahead_in_one_sentence(sqlite_file: Path) -> None:
    engine = open_engine(str(sqlite_file))
    previous = migrations.revision_chain()[head_revision()][0]
    migrations.downgrade(engine, previous)
    with pytest.raises(UserError) as behind:
        open_checked(str(sqlite_file))
    message = str(behind.value)
    assert f"is at schema {previous} but this version needs {head_revision()}" in message
    assert "run 'padformer-edge db upgrade" in message and "\n" not in message
    upgrade(engine)
    with engine.begin() as conn:  # as a newer release would leave it
        conn.execute(text(f"UPDATE {migrations.VERSION_TABLE} SET version_num = '9999'"))
    with pytest.raises(UserError) as ahead:
        open_checked(str(sqlite_file))
    message = str(ahead.value)
    assert "is at schema 9999, which this version" in message
    assert "install that version or newer" in message and "\n" not in message


def test_migrate_on_start_backs_up_then_upgrades_under_the_lock(
    sqlite_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = open_engine(str(sqlite_file))
    for i in range(3):
        enqueue(
            engine,
            camera="c",
            product="p",
            source_path=f"/{i}.png",
            sha256=digest(str(i)),
            size_bytes=1,
        )
    lock = FileLock(str(sqlite_file) + ".migrate.lock")
    ran: list[str] = []

    def pretend_upgrade(_engine: object, revision: str = "head") -> None:
        with pytest.raises(Timeout):  # a second daemon starting now would have to wait
            lock.acquire(timeout=0)
        ran.append(revision)

    # Only one revision exists, so "behind" is staged by announcing a newer head.
    monkeypatch.setattr(migrations, "head_revision", lambda: "9999")
    monkeypatch.setattr(migrations, "upgrade", pretend_upgrade)
    backups = tmp_path / "backups"
    assert migrate_on_start(engine, backups) == "9999"
    assert ran == ["head"]
    (copy,) = backups.iterdir()
    saved = open_engine(str(copy), read_only=True)
    assert migrations.integrity_errors(saved) == []
    with saved.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM inspections")).scalar() == 3


def test_migrate_on_start_is_a_no_op_at_head(sqlite_file: Path, tmp_path: Path) -> None:
    engine = open_engine(str(sqlite_file))
    assert migrate_on_start(engine, tmp_path / "backups") == head_revision()
    assert not (tmp_path / "backups").exists()


def finished_rows_at_an_old_revision(
    engine: Engine,
    count: int,
    sources: list[str] | None = None,
    heatmaps: list[str | None] | None = None,
) -> list[int]:
    """``count`` finished inspections (scores 0, 1, ...; ``sources`` and ``heatmaps``
    their paths) written with plain SQL: the ORM maps the head's columns, which a
    database at an older revision does not have yet."""
    sources = sources or [f"/{i}.png" for i in range(count)]
    heatmaps = heatmaps or [None] * count
    ids = []
    with engine.begin() as conn:
        for i in range(count):
            ids.append(conn.execute(text(
                "INSERT INTO inspections (camera, product, source_path, sha256, size_bytes, "
                "status, attempts, score, threshold, is_anomaly, heatmap_path, model_sha256, "
                "detect_ms, discovered_at) VALUES ('c', 'p', :path, :sha, 1, 'done', 1, "
                ":score, 1.0, :anomaly, :heatmap, :model, 1.0, CURRENT_TIMESTAMP) RETURNING id"),
                {"path": sources[i], "sha": digest(str(i)), "score": float(i),
                 "anomaly": i > 1, "heatmap": heatmaps[i], "model": "0" * 64},
            ).scalar_one())  # fmt: skip
    return ids


def test_the_review_migration_keeps_existing_rows_and_goes_back(db_url: str) -> None:
    """A line's history at 0002 (before reviews) upgrades with every row intact, takes
    reviews at head, and downgrades to 0002 without them."""
    engine = open_engine(db_url)
    upgrade(engine, "0002")
    ids = finished_rows_at_an_old_revision(engine, 3)
    assert "reviews" not in inspect(engine).get_table_names()
    upgrade(engine)
    assert current_revision(engine) == head_revision()
    with engine.connect() as conn:
        kept = conn.execute(text("SELECT id, score FROM inspections ORDER BY id")).all()
    assert [(i, s) for i, s in kept] == [(row_id, float(n)) for n, row_id in enumerate(ids)]
    save_review(engine, ids[2], ReviewVerdict.false_alarm, reviewer="ann", note="dust")
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM reviews")).scalar() == 1
    with pytest.raises(Exception, match=r"(?i)check|constraint"), engine.begin() as conn:
        conn.execute(text("INSERT INTO reviews (inspection_id, verdict, reviewer, "
                          "reviewed_at) VALUES (:i, 'maybe', 'x', CURRENT_TIMESTAMP)"),
                     {"i": ids[1]})  # fmt: skip
    migrations.downgrade(engine, "0002")
    assert "reviews" not in inspect(engine).get_table_names()
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM inspections")).scalar() == 3
    engine.dispose()


def test_the_path_migration_makes_state_paths_relative_and_goes_back(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows written at 0003 with absolute paths: those under the state folder (given
    through a symbolic link, as a camera folder is recorded resolved) become relative at
    head, a camera folder elsewhere and a name holding LIKE's wildcards stay as they
    were, and the downgrade puts the current state folder back in front."""
    real = tmp_path / "real_state%"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    state = tmp_path / "link"
    monkeypatch.setenv("PADFORMER_EDGE_STATE_DIR", str(state))
    recorded = {
        f"{state}/cam/a.png": (f"{state}/heatmaps/00000/1.png", "cam/a.png",
                               "heatmaps/00000/1.png"),
        f"{real}/cam/b.png": (None, "cam/b.png", None),
        "/srv/camera/c.png": (f"{state}/heatmaps/00000/3.png", "/srv/camera/c.png",
                              "heatmaps/00000/3.png"),
        f"{tmp_path}/real_stateX/d.png": (None, f"{tmp_path}/real_stateX/d.png", None),
    }  # fmt: skip
    engine = open_engine(db_url)
    upgrade(engine, "0003")
    finished_rows_at_an_old_revision(
        engine, len(recorded), list(recorded), [h for h, _, _ in recorded.values()]
    )
    upgrade(engine)

    def stored() -> list[tuple[str, str | None]]:
        with engine.connect() as conn:
            query = text("SELECT source_path, heatmap_path FROM inspections ORDER BY id")
            return [tuple(r) for r in conn.execute(query).all()]

    assert stored() == [(source, heatmap) for _, source, heatmap in recorded.values()]
    migrations.downgrade(engine, "0003")
    back = stored()
    assert back[0] == (f"{state}/cam/a.png", f"{state}/heatmaps/00000/1.png")
    assert back[1] == (f"{state}/cam/b.png", None)  # the resolved form, now through the link
    assert back[2:] == [("/srv/camera/c.png", f"{state}/heatmaps/00000/3.png"),
                        (f"{tmp_path}/real_stateX/d.png", None)]  # fmt: skip
    engine.dispose()


def test_db_upgrade_by_a_role_without_schema_rights_says_so(tmp_path: Path) -> None:
    """The plant's line, workstation and page roles write rows, not the schema
    (docs/deploy.md, Roles): ``db upgrade`` run as one on a database that is behind says
    which role it was and what to run instead, and leaves the schema as it was."""
    with own_cluster() as cluster:
        owner = open_engine(cluster.url)
        behind = migrations.revision_chain()[head_revision()][0]
        upgrade(owner, behind)
        with owner.begin() as conn:
            conn.execute(text("CREATE ROLE line_writer LOGIN"))
            conn.execute(text("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "
                              "public TO line_writer"))  # fmt: skip
        as_line = cluster.url.replace("//padformer@", "//line_writer@")
        done = run_cli("db", "upgrade", "--db", as_line,
                       env={"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
        assert done.returncode == 2, done.stderr
        message = done.stderr.strip()
        assert "\n" not in message and "Traceback" not in message
        assert message.startswith("error: the PostgreSQL role 'line_writer' may not change "
                                  "the schema of ")  # fmt: skip
        assert f"at schema {behind} while this version needs {head_revision()}" in message
        assert "'padformer-edge db upgrade --db URL'" in message
        assert current_revision(owner) == behind
        owner.dispose()
