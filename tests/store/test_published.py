"""Published profile versions and line assignments in the store, on every backend:
a version is published once, a line runs the newest assignment, a rollback goes back
to the version the line ran before."""

from __future__ import annotations

import hashlib

import pytest
from sqlalchemy import Engine

from padformer_edge.errors import UserError
from padformer_edge.store.engine import reading
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
