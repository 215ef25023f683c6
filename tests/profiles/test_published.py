"""Publishing a profile version from the workstation and pulling it onto a line, with
real profile folders (the tiny random model) and a real SQLite file at the schema's
head: every file arrives byte for byte, a version already in place is left alone, and a
version whose stored bytes do not match their sha256 is refused without touching the
line's folder."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from pathlib import Path
from subprocess import CompletedProcess

import pytest
import yaml
from sqlalchemy import Engine, event, update

from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import pin_threshold
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.publish import publish_profile
from padformer_edge.profiles.pull import pull_version
from padformer_edge.profiles.versions import kept_versions, save_profile
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.published import assigned, published_versions
from padformer_edge.store.published_tables import published_files
from padformer_edge.store.users import add_user
from padformer_edge.store.vocabulary import Role
from tests.cli_process import run_cli
from tests.daemon.harness import make_profile
from tests.store.conftest import db_url  # noqa: F401  (the sqlite/postgresql parameter)


@pytest.fixture
def plant(tmp_path: Path) -> Engine:
    engine = open_engine(str(tmp_path / "plant.sqlite3"))
    upgrade(engine)
    yield engine
    engine.dispose()


def tree(folder: Path) -> dict[str, str]:
    """Each file under ``folder`` (the profile's own, not kept versions or caches) by its
    relative path, with its sha256."""
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in folder.rglob("*")
        if p.is_file() and p.relative_to(folder).parts[0] in ("references", PROFILE_FILE)
    }


def test_a_published_version_is_pulled_byte_for_byte(tmp_path: Path, plant: Engine) -> None:
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, new = publish_profile(workstation, "bolt", plant, "ana")
    assert new and version.threshold == 0.25 and version.runtime == "torch"
    assert publish_profile(workstation, "bolt", plant, "ana")[1] is False

    with reading(plant) as conn:
        pulled = pull_version(conn, line, "bolt", version.version)
    assert pulled is not None and pulled.threshold == 0.25
    assert tree(line / "bolt") == tree(workstation / "bolt")
    pulled.verify_runnable()  # the checkpoint it names and every reference check out
    with reading(plant) as conn:  # the same version again: nothing to do
        assert pull_version(conn, line, "bolt", version.version) is None
    assert not list(line.glob(".*"))  # no staging folder left behind


def test_a_new_version_replaces_the_old_which_is_kept(tmp_path: Path, plant: Engine) -> None:
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    first, _ = publish_profile(workstation, "bolt", plant, "ana")
    pin_threshold(load_profile(workstation, "bolt"), 0.75)  # version 2
    second, _ = publish_profile(workstation, "bolt", plant, "ana")
    assert (first.version, second.version) == (1, 2)
    with reading(plant) as conn:
        pull_version(conn, line, "bolt", 1)
        pulled = pull_version(conn, line, "bolt", 2)
    assert pulled is not None and (pulled.config.version, pulled.threshold) == (2, 0.75)
    assert kept_versions(pulled) == [1]
    assert tree(line / "bolt") == tree(workstation / "bolt")


def test_a_tampered_file_is_refused_and_the_line_keeps_its_version(
    tmp_path: Path, plant: Engine
) -> None:
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    publish_profile(workstation, "bolt", plant, "ana")
    with reading(plant) as conn:
        pull_version(conn, line, "bolt", 1)
    before = tree(line / "bolt")
    pin_threshold(load_profile(workstation, "bolt"), 0.75)
    second, _ = publish_profile(workstation, "bolt", plant, "ana")
    size = (workstation / "bolt" / "references" / "0.png").stat().st_size
    with plant.begin() as conn:
        conn.execute(
            update(published_files)
            .where(published_files.c.published_id == second.id)
            .where(published_files.c.path == "references/0.png")
            .values(content=bytes(size))  # other bytes, as many as were published
        )
    with reading(plant) as conn, pytest.raises(UserError) as refused:
        pull_version(conn, line, "bolt", 2)
    message = str(refused.value)
    assert "references/0.png does not match the sha256 recorded" in message
    assert "\n" not in message
    assert tree(line / "bolt") == before
    assert load_profile(line, "bolt").config.version == 1
    assert not list(line.glob(".*"))


def test_a_file_the_version_does_not_name_is_refused(tmp_path: Path, plant: Engine) -> None:
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, _ = publish_profile(workstation, "bolt", plant, "ana")
    with plant.begin() as conn:
        conn.execute(published_files.insert().values(
            published_id=version.id, path="../escape.txt",
            sha256=hashlib.sha256(b"x").hexdigest(), size_bytes=1, content=b"x",
        ))  # fmt: skip
    with reading(plant) as conn, pytest.raises(UserError, match="not a plain path"):
        pull_version(conn, line, "bolt", 1)
    assert not (tmp_path / "escape.txt").exists() and not (line / "bolt").exists()


def test_a_profile_without_a_threshold_is_not_published(tmp_path: Path, plant: Engine) -> None:
    workstation = tmp_path / "workstation"
    make_profile(workstation, "bolt", threshold=0.25)
    profile = load_profile(workstation, "bolt")
    save_profile(profile, profile.config.model_copy(update={"calibration": None}))
    with pytest.raises(UserError, match="has no threshold yet"):
        publish_profile(workstation, "bolt", plant, "ana")


def test_the_commands_sign_by_the_one_rule(tmp_path: Path, plant: Engine) -> None:
    """Once the database has users, publish, assign and rollback --line take an engineer's
    name and record it; an operator is refused in one sentence, before anything changes."""
    workstation = tmp_path / "workstation"
    make_profile(workstation, "bolt", threshold=0.25)
    add_user(plant, "olga", Role.operator)
    add_user(plant, "eve", Role.engineer)
    database = str(tmp_path / "plant.sqlite3")
    env = {"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")}

    def cli(*args: str) -> CompletedProcess[str]:
        return run_cli(*args, "--db", database, env=env)

    refused = cli("profile", "publish", "bolt", "--root", str(workstation), "--yes", "olga")
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert "user 'olga' is an operator; only an engineer publishes a profile version" in (
        refused.stderr
    )
    assert (
        cli("profile", "publish", "bolt", "--root", str(workstation), "--yes", "EVE").returncode
        == 0
    )
    pin_threshold(load_profile(workstation, "bolt"), 0.75)
    assert (
        cli("profile", "publish", "bolt", "--root", str(workstation), "--yes", "eve").returncode
        == 0
    )
    for version in ("1", "2"):
        done = cli("profile", "assign", "bolt", "--line", "press-1", "--version", version,
                   "--yes", "eve")  # fmt: skip
        assert done.returncode == 0, done.stderr
    refused = cli("profile", "rollback", "bolt", "--line", "press-1", "--yes", "olga")
    assert refused.returncode == 2 and "only an engineer rolls a profile back" in refused.stderr
    done = cli("profile", "rollback", "bolt", "--all-lines", "--yes", "eve")
    assert done.returncode == 0 and "line 'press-1' is back on version 1" in done.stdout
    with reading(plant) as conn:
        assert {v.published_by for v in published_versions(conn, "bolt")} == {"eve"}
        (now,) = assigned(conn, "press-1")
    assert (now.version, now.action, now.assigned_by) == (1, "rollback", "eve")


def test_a_line_starts_with_what_it_has_when_the_database_cannot_say(tmp_path: Path) -> None:
    """``watch``'s pull at start leaves the profiles folder alone, without an error, when
    the database is unreachable, does not exist yet or is behind the schema's head."""
    from padformer_edge.daemon.assignments import pull_at_start
    from padformer_edge.daemon.settings import DaemonConfig

    def config(published: str) -> DaemonConfig:
        return DaemonConfig(
            database=str(tmp_path / "line.sqlite3"),
            cameras=[{"name": "cam0", "path": str(tmp_path / "cam"), "profile": "bolt"}],
            published_profiles={"database": published},
        )

    behind = tmp_path / "behind.sqlite3"
    old = open_engine(str(behind))
    upgrade(old, "0008")
    old.dispose()
    unreachable = "postgresql://nobody@127.0.0.1:1/plant?connect_timeout=2"  # refused at once
    for published in (unreachable, str(tmp_path / "absent.sqlite3"), str(behind)):
        assert pull_at_start(config(published), tmp_path / "profiles") == []
    assert not (tmp_path / "profiles").exists() and not (tmp_path / "absent.sqlite3").exists()


@pytest.fixture
def published_db(db_url: str) -> Iterator[Engine]:  # noqa: F811
    """The plant database on every backend: a SQLite file, and the test PostgreSQL."""
    engine = open_engine(db_url)
    upgrade(engine)
    yield engine
    engine.dispose()


def rewrite(engine: Engine, published_id: int, path: str, content: bytes,
            new_path: str | None = None) -> None:  # fmt: skip
    """Replace one file of a published version, its sha256 and size recorded anew (what
    someone with write access to the plant database could do)."""
    with engine.begin() as conn:
        conn.execute(
            update(published_files)
            .where(published_files.c.published_id == published_id)
            .where(published_files.c.path == path)
            .values(
                path=new_path or path,
                content=content,
                size_bytes=len(content),
                sha256=hashlib.sha256(content).hexdigest(),
            )
        )


def rewrite_yaml(engine: Engine, workstation: Path, published_id: int, change) -> None:
    """``profile.yaml`` of the published version rewritten by ``change`` (a function on its
    parsed mapping), its sha256 recorded anew."""
    data = yaml.safe_load((workstation / "bolt" / PROFILE_FILE).read_text())
    change(data)
    rewrite(engine, published_id, PROFILE_FILE, yaml.safe_dump(data).encode())


def content_reads(engine: Engine) -> list[str]:
    """The path of every file whose bytes are selected from the database from now on."""
    reads: list[str] = []

    def seen(conn, cursor, statement, parameters, context, executemany) -> None:
        if "published_files.content" in statement:
            values = parameters.values() if isinstance(parameters, dict) else parameters
            reads.extend(v for v in values if isinstance(v, str))

    event.listen(engine, "before_cursor_execute", seen)
    return reads


def test_a_reference_named_by_an_absolute_path_is_refused(
    tmp_path: Path, published_db: Engine
) -> None:
    """The audit's version 2: its files list ``references//ELSEWHERE/0.png`` (one path to
    ``PurePosixPath``) and its profile.yaml names the reference by that absolute path, the
    sha256 recorded anew; the line refuses it and reads nothing from ELSEWHERE."""
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, _ = publish_profile(workstation, "bolt", published_db, "ana")
    elsewhere = tmp_path / "elsewhere" / "0.png"
    elsewhere.parent.mkdir()
    picture = (workstation / "bolt" / "references" / "0.png").read_bytes()
    elsewhere.write_bytes(picture)
    rewrite(published_db, version.id, "references/0.png", picture,
            new_path=f"references/{elsewhere}")  # fmt: skip

    def absolute(data: dict) -> None:
        data["references"][0]["file"] = str(elsewhere)

    rewrite_yaml(published_db, workstation, version.id, absolute)
    with reading(published_db) as conn, pytest.raises(UserError) as refused:
        pull_version(conn, line, "bolt", 1)
    assert f"names the file 'references/{elsewhere}', which is not a plain path" in str(
        refused.value
    )
    assert not (line / "bolt").exists() and not list(line.glob(".*"))


@pytest.mark.parametrize("path", ["references/./0.png", "references/0.png/", "/references/0.png"])
def test_a_listed_path_that_is_not_plain_is_refused(
    tmp_path: Path, published_db: Engine, path: str
) -> None:
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, _ = publish_profile(workstation, "bolt", published_db, "ana")
    picture = (workstation / "bolt" / "references" / "0.png").read_bytes()
    rewrite(published_db, version.id, "references/0.png", picture, new_path=path)
    with reading(published_db) as conn, pytest.raises(UserError, match="not a plain path"):
        pull_version(conn, line, "bolt", 1)
    assert not (line / "bolt").exists()


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("threshold", 99.0, "threshold 99.0 where 0.25 was recorded"),
        ("model", "d" * 64, "model_sha256 'ddd"),
    ],
)
def test_a_profile_yaml_that_scores_otherwise_than_recorded_is_refused(
    tmp_path: Path, published_db: Engine, field: str, value: object, said: str
) -> None:
    """The fields recorded at publish (``publish.version_identity``: metric, runtime,
    model, comparator, threshold) are compared with the pulled profile.yaml: a rewrite with
    its sha256 recorded anew (the audit's threshold of 99.0, another model) is refused."""
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, _ = publish_profile(workstation, "bolt", published_db, "ana")

    def change(data: dict) -> None:
        if field == "threshold":
            data["calibration"]["threshold"] = value
        else:  # another checkpoint, calibrated on (as a coherent rewrite would say)
            data["model"]["sha256"] = data["calibration"]["model_sha256"] = value

    rewrite_yaml(published_db, workstation, version.id, change)
    with reading(published_db) as conn, pytest.raises(UserError) as refused:
        pull_version(conn, line, "bolt", 1)
    assert said in str(refused.value) and "recorded when it was published" in str(refused.value)
    assert not (line / "bolt").exists()


def test_a_file_is_refused_on_its_size_before_it_is_downloaded(
    tmp_path: Path, published_db: Engine
) -> None:
    """An extra file the profile.yaml does not name, and a file whose stored bytes are not
    the size recorded at publish, are refused without their bytes leaving the database."""
    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    version, _ = publish_profile(workstation, "bolt", published_db, "ana")
    extra = bytes(1 << 20)
    with published_db.begin() as conn:
        conn.execute(published_files.insert().values(
            published_id=version.id, path="exported/extra.bin",
            sha256=hashlib.sha256(extra).hexdigest(), size_bytes=len(extra), content=extra,
        ))  # fmt: skip
    reads = content_reads(published_db)
    with reading(published_db) as conn, pytest.raises(UserError, match="not named: exported"):
        pull_version(conn, line, "bolt", 1)
    assert "exported/extra.bin" not in reads and reads == [PROFILE_FILE]

    with published_db.begin() as conn:
        conn.execute(published_files.delete().where(published_files.c.path == "exported/extra.bin"))
        conn.execute(
            update(published_files)
            .where(published_files.c.path == "references/1.png")
            .values(content=extra)  # sha256 and size as published, other bytes
        )
    reads.clear()
    with reading(published_db) as conn, pytest.raises(UserError) as refused:
        pull_version(conn, line, "bolt", 1)
    assert f"references/1.png holds {len(extra)} bytes where" in str(refused.value)
    assert reads == [] and not (line / "bolt").exists()


def test_a_refused_version_is_not_fetched_again_until_another_is_assigned(
    tmp_path: Path, published_db: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The poller logs a refused version once and downloads none of it again, however long
    it stays assigned; the next assignment is pulled at the next poll."""
    from padformer_edge.daemon.assignments import AssignmentPoller
    from padformer_edge.store.published import assign

    workstation, line = tmp_path / "workstation", tmp_path / "line"
    make_profile(workstation, "bolt", threshold=0.25)
    publish_profile(workstation, "bolt", published_db, "ana")
    size = (workstation / "bolt" / "references" / "1.png").stat().st_size
    with published_db.begin() as conn:  # other bytes of the published size
        conn.execute(
            update(published_files)
            .where(published_files.c.path == "references/1.png")
            .values(content=bytes(size))
        )
    assign(published_db, "press-1", "bolt", 1, "ana")
    poller = AssignmentPoller(published_db, "press-1", line, interval_s=0)
    reads = content_reads(published_db)
    assert poller.poll() == [] and reads[-1] == "references/1.png"
    later = time.monotonic() + 24 * 3600.0  # a day of polls later, the same assignment
    monkeypatch.setattr(time, "monotonic", lambda: later)
    reads.clear()
    assert poller.poll() == [] and reads == []
    monkeypatch.undo()
    pin_threshold(load_profile(workstation, "bolt"), 0.75)  # version 2, sound
    publish_profile(workstation, "bolt", published_db, "ana")
    assign(published_db, "press-1", "bolt", 2, "ana")
    assert poller.poll() == ["bolt"] and load_profile(line, "bolt").config.version == 2
