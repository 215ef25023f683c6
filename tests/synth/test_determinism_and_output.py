"""Same seed, same bytes; another seed, other poses; the output folder is never half-written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.synth import ViewCounts, render_dataset
from tests.synth.conftest import TINY, TINY_MESHES, TINY_SIZE

SMALL = ViewCounts(train=2, test_per_defect=1, test_good=1)


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _poses(root: Path, name: str) -> list[list[list[float]]]:
    frames = json.loads((root / name / "transforms.json").read_text())["frames"]
    return [f["transform_matrix"] for f in frames]


def test_same_seed_gives_identical_files(tiny_dataset: Path, tmp_path: Path) -> None:
    again = render_dataset(TINY_MESHES, tmp_path / "again", TINY, size=TINY_SIZE, seed=0)
    assert _files(again) == _files(tiny_dataset)


def test_another_seed_gives_other_poses(tmp_path: Path) -> None:
    first = render_dataset(["builtin:mug"], tmp_path / "a", SMALL, size=48, seed=1)
    second = render_dataset(["builtin:mug"], tmp_path / "b", SMALL, size=48, seed=2)
    assert _poses(first, "mug") != _poses(second, "mug")
    assert _files(first)["mug/train/good/0.png"] != _files(second)["mug/train/good/0.png"]


def test_a_class_does_not_depend_on_its_companions(tmp_path: Path) -> None:
    alone = render_dataset(["builtin:mug"], tmp_path / "alone", SMALL, size=48, seed=3)
    paired = render_dataset(["builtin:duck", "builtin:mug"], tmp_path / "pair", SMALL, 48, 3)
    assert _files(alone / "mug") == _files(paired / "mug")


def test_rerun_into_the_same_dataset_is_a_no_op(tiny_dataset: Path) -> None:
    before = {p: p.stat().st_mtime_ns for p in tiny_dataset.rglob("*")}
    render_dataset(TINY_MESHES, tiny_dataset, TINY, size=TINY_SIZE, seed=0)
    assert {p: p.stat().st_mtime_ns for p in tiny_dataset.rglob("*")} == before


def test_a_different_dataset_in_the_output_folder_is_refused(tiny_dataset: Path) -> None:
    before = _files(tiny_dataset)
    with pytest.raises(UserError, match="already holds a different dataset"):
        render_dataset(TINY_MESHES, tiny_dataset, TINY, size=TINY_SIZE, seed=1)
    assert _files(tiny_dataset) == before


def test_a_folder_with_other_files_is_refused(tmp_path: Path) -> None:
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "holiday.jpg").write_bytes(b"not a dataset")
    with pytest.raises(UserError, match="already holds"):
        render_dataset(["builtin:mug"], tmp_path / "photos", SMALL, size=48)


def test_an_interrupted_run_leaves_nothing_behind(tmp_path: Path) -> None:
    def stop_halfway(done: int, total: int) -> None:
        if done == total // 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        render_dataset(["builtin:mug"], tmp_path / "out", SMALL, size=48, progress=stop_halfway)
    assert list(tmp_path.iterdir()) == []


def test_an_empty_output_folder_is_filled(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    render_dataset(["builtin:mug"], tmp_path / "out", SMALL, size=48)
    assert (tmp_path / "out" / "mug" / "train" / "good" / "1.png").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
