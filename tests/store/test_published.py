"""Published profile versions and line assignments in the store, on every backend:
a version is published once, a line runs the newest assignment, a rollback goes back
to the version the line ran before."""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, delete, insert, text

from padformer_edge.errors import UserError
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.migrations import upgrade
from padformer_edge.store.published import (
    ROLLBACK,
    assign,
    assigned,
    file_content,
    history,
    lines_running,
    publish,
    published_versions,
    rollback_line,
    version_files,
)
from padformer_edge.store.published_tables import published_files, published_profiles
from tests.cli_process import run_cli
from tests.pg_cluster import Cluster, own_cluster


def identity(version: int, threshold: float = 0.5) -> dict[str, object]:
    return {
        "name": "bolt", "version": version, "metric": "max", "runtime": "onnxruntime",
        "model_sha256": "a" * 64, "comparator_sha256": None, "threshold": threshold,
    }  # fmt: skip


def files(*contents: bytes) -> dict[str, tuple[str, bytes]]:
    out = {"profile.yaml": (hashlib.sha256(b"yaml").hexdigest(), b"yaml")}
    for index, content in enumerate(contents):
        out[f"references/{index}.png"] = (hashlib.sha256(content).hexdigest(), content)
    return out


def test_a_version_is_published_once_with_its_bytes(engine: Engine) -> None:
    blob = bytes(range(256)) * 40  # binary, with every byte value
    version, new = publish(engine, identity(1), files(blob), "ana")
    assert new and version.version == 1 and version.published_by == "ana"
    again, new_again = publish(engine, identity(1), files(blob), "bo")
    assert not new_again and again.id == version.id and again.published_by == "ana"
    with reading(engine) as conn:
        stored = version_files(conn, version.id)
        assert [f.path for f in stored] == ["profile.yaml", "references/0.png"]
        assert file_content(conn, version.id, "references/0.png") == blob
        assert stored[1].sha256 == hashlib.sha256(blob).hexdigest()
        assert stored[1].size_bytes == len(blob)


def test_other_files_under_a_published_version_are_refused(engine: Engine) -> None:
    publish(engine, identity(1), files(b"one"), "ana")
    with pytest.raises(UserError, match="version 1 of profile 'bolt' was published"):
        publish(engine, identity(1), files(b"two"), "ana")
    with reading(engine) as conn:
        assert [v.version for v in published_versions(conn, "bolt")] == [1]


def test_assign_defaults_to_the_newest_and_records_a_change_once(engine: Engine) -> None:
    with pytest.raises(UserError, match="no published version in this database"):
        assign(engine, "line-a", "bolt", None, "ana")
    publish(engine, identity(1), files(b"one"), "ana")
    publish(engine, identity(2), files(b"two"), "ana")
    first, new = assign(engine, "line-a", "bolt", None, "ana")
    assert new and first.version == 2 and first.assigned_by == "ana"
    same, new = assign(engine, "line-a", "bolt", 2, "bo")
    assert not new and same.id == first.id
    with pytest.raises(UserError, match=r"no published version 7 \(published: 1, 2\)"):
        assign(engine, "line-a", "bolt", 7, "ana")
    assign(engine, "line-b", "bolt", 1, "ana")
    with reading(engine) as conn:
        now = {(a.line, a.profile): a.version for a in assigned(conn)}
        assert now == {("line-a", "bolt"): 2, ("line-b", "bolt"): 1}
        assert [a.version for a in assigned(conn, "line-b")] == [1]
        assert lines_running(conn, "bolt") == ["line-a", "line-b"]


def test_rollback_goes_back_to_the_version_the_line_ran_before(engine: Engine) -> None:
    for version in (1, 2, 3):
        publish(engine, identity(version), files(bytes([version])), "ana")
    with pytest.raises(UserError, match="never assigned profile 'bolt'"):
        rollback_line(engine, "line-a", "bolt", "ana")
    assign(engine, "line-a", "bolt", 1, "ana")
    with pytest.raises(UserError, match="nothing to roll back to"):
        rollback_line(engine, "line-a", "bolt", "ana")
    assign(engine, "line-a", "bolt", 3, "ana")
    assign(engine, "line-a", "bolt", 2, "ana")
    back = rollback_line(engine, "line-a", "bolt", "bo")
    assert (back.version, back.action, back.assigned_by) == (3, ROLLBACK, "bo")
    again = rollback_line(engine, "line-a", "bolt", "bo")  # before 3 it ran 2
    assert again.version == 2
    with reading(engine) as conn:
        assert [a.version for a in history(conn, "line-a", "bolt")] == [1, 3, 2, 3, 2]
        assert [a.version for a in assigned(conn, "line-a")] == [2]


@pytest.fixture(scope="module")
def server() -> Iterator[Cluster]:
    """A PostgreSQL server of this module's own: the race below needs a server's
    concurrent writers (SQLite's writers take the lock before they read)."""
    with own_cluster() as owned:
        migrated = open_engine(owned.url)
        upgrade(migrated)
        migrated.dispose()
        yield owned


@pytest.mark.parametrize("same_files", [True, False], ids=["same-files", "other-files"])
def test_two_publishes_of_one_new_version_at_once(server: Cluster, same_files: bool) -> None:
    """Both find the version missing and insert it; the one whose insert waits on the
    other's fails on the unique key when that commits, looks again and answers as a
    second publish does: the version as stored, or the one-sentence refusal."""
    engine = open_engine(server.url)
    with engine.begin() as conn:
        conn.execute(delete(published_profiles))  # the files go with their version
    theirs = files(b"one")
    mine = theirs if same_files else files(b"two")
    outcome: list[object] = []

    def second_publish() -> None:
        try:
            outcome.append(publish(engine, identity(1), mine, "bo"))
        except UserError as refused:
            outcome.append(refused)

    try:
        with engine.begin() as first:  # the first publish, held open mid-transaction
            published_id = first.execute(
                insert(published_profiles).values(
                    **identity(1), published_at=datetime.now(UTC), published_by="ana"
                )
            ).inserted_primary_key[0]
            for path, (sha, content) in theirs.items():
                first.execute(insert(published_files).values(
                    published_id=published_id, path=path, sha256=sha,
                    size_bytes=len(content), content=content,
                ))  # fmt: skip
            racer = threading.Thread(target=second_publish)
            racer.start()
            wait_until_blocked(server)  # its insert waits on the first one's key
        racer.join(60)
        assert not racer.is_alive()
        with reading(engine) as conn:
            stored = published_versions(conn, "bolt")
        assert [(v.id, v.published_by) for v in stored] == [(published_id, "ana")]
        [answer] = outcome
        if same_files:
            assert answer == (stored[0], False)
        else:
            assert isinstance(answer, UserError)
            assert "version 1 of profile 'bolt' was published on" in str(answer)
            assert "by ana with other files" in str(answer)
    finally:
        engine.dispose()


def wait_until_blocked(cluster: Cluster) -> None:
    """Until a session of ``cluster`` waits for a lock another holds."""
    watcher = open_engine(cluster.url)
    try:
        for _ in range(600):
            with watcher.connect() as conn:
                waiting = conn.execute(
                    text("SELECT count(*) FROM pg_locks WHERE NOT granted")
                ).scalar_one()
            if waiting:
                return
            time.sleep(0.1)
        raise AssertionError("the second publish never waited on the first one's insert")
    finally:
        watcher.dispose()


def test_rollback_of_every_line_reports_each_and_leaves_only_the_refused(
    db_url: str, tmp_path: Path
) -> None:
    """The audit's three lines, sorted press-t, press-x, press-y: press-x ran no earlier
    version. ``rollback --all-lines`` rolls press-t and press-y back, names press-x with
    its reason, and its exit status says a line was left."""
    engine = open_engine(db_url)
    upgrade(engine)
    publish(engine, identity(1), files(b"one"), "ana")
    publish(engine, identity(2), files(b"two"), "ana")
    for line, versions in (("press-t", (1, 2)), ("press-x", (2,)), ("press-y", (1, 2))):
        for version in versions:
            assign(engine, line, "bolt", version, "ana")
    done = run_cli("profile", "rollback", "bolt", "--all-lines", "--yes", "ana", "--db", db_url,
                   env={"PADFORMER_EDGE_STATE_DIR": str(tmp_path / "state")})  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    for line in ("press-t", "press-y"):
        assert f"line '{line}' is back on version 1 of profile 'bolt'" in done.stdout
    assert "line 'press-x' ran no other version of profile 'bolt'" in done.stderr
    left = "1 of 3 line(s) were left on their version of profile 'bolt' (press-x)"
    assert left in done.stderr
    with reading(engine) as conn:
        now = {a.line: (a.version, a.action) for a in assigned(conn)}
    engine.dispose()
    assert now == {"press-t": (1, ROLLBACK), "press-x": (2, "assign"), "press-y": (1, ROLLBACK)}
