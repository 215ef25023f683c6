"""The one atomic-write path: synced file, rename, synced folder; nothing half-written.

A power cut cannot be staged in a test, so the test watches which descriptors are
synced (the real ``os.fsync`` still runs) and checks the order that makes a rename
durable: the file's data before the rename, the folder after it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import torch

from padformer_edge.files.atomic import (
    atomic_path,
    folder_syncs_deferred,
    sync_folders,
    write_atomic,
)
from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model
from padformer_edge_training.resume import save_resume


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Every fsync as (kind, what): ('dir', folder) or ('file', name as it was then)."""
    calls: list[tuple[str, str]] = []
    real = os.fsync

    def watching(fd: int) -> None:
        info = os.fstat(fd)
        link = os.readlink(f"/proc/self/fd/{fd}") if Path("/proc/self/fd").exists() else "?"
        calls.append(("dir" if stat.S_ISDIR(info.st_mode) else "file", link))
        real(fd)

    monkeypatch.setattr(os, "fsync", watching)
    return calls


def test_write_atomic_syncs_the_file_then_the_folder(tmp_path, synced) -> None:
    target = tmp_path / "out" / "7.png"
    write_atomic(target, b"picture")
    assert target.read_bytes() == b"picture"
    kinds = [kind for kind, _ in synced]
    assert kinds == ["file", "dir"]
    assert synced[1][1] in (str(target.parent), "?")
    assert sorted(p.name for p in target.parent.iterdir()) == ["7.png"]  # no temp left
    assert stat.S_IMODE(target.stat().st_mode) & 0o044  # readable by others, like open()


def test_a_failed_writer_leaves_the_old_file_and_no_temporary(tmp_path) -> None:
    target = tmp_path / "model.safetensors"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("writer died")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_checkpoints_and_resume_points_take_the_same_path(tmp_path, synced) -> None:
    model = build_model("tiny")
    path = tmp_path / "run" / "last.safetensors"
    save_checkpoint(path, model, {"note": "x"})
    save_resume(tmp_path / "run" / "last.resume.pt", {"global_step": 3})
    assert [kind for kind, _ in synced] == ["file", "dir", "file", "dir"]
    loaded, metadata = load_checkpoint(path)
    assert metadata == {"note": "x"}
    for name, tensor in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], tensor)
    assert sorted(p.name for p in path.parent.iterdir()) == [
        "last.resume.pt",
        "last.safetensors",
    ]


def test_a_batch_syncs_each_file_and_leaves_its_folders_to_one_sync(tmp_path, synced) -> None:
    folders: set[Path] = set()
    with folder_syncs_deferred(folders):
        for name in ("a/1.png", "a/2.png", "b/3.png"):
            write_atomic(tmp_path / name, name.encode())
    assert [kind for kind, _ in synced] == ["file", "file", "file"]  # data before each rename
    assert folders == {tmp_path / "a", tmp_path / "b"}
    assert (tmp_path / "a" / "2.png").read_bytes() == b"a/2.png"  # in place at once
    sync_folders([*folders, tmp_path / "a"])
    assert [kind for kind, _ in synced[3:]] == ["dir", "dir"]  # each folder once
    write_atomic(tmp_path / "c" / "4.png", b"4")  # outside the batch: synced as ever
    assert [kind for kind, _ in synced[5:]] == ["file", "dir"]
