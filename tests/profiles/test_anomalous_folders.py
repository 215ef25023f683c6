"""Which files ``calibrate --anomalous`` takes: folders of images, a parent of defect-kind
folders (``good`` skipped), several of either, and one sentence for a folder with none."""

from __future__ import annotations

from pathlib import Path

import pytest

from padformer_edge.errors import UserError
from padformer_edge.profiles.calibrate import anomalous_files


def touch(folder: Path, *names: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"")  # only names and suffixes are read here


def test_parents_and_plain_folders_mix_and_good_is_skipped(tmp_path: Path) -> None:
    test = tmp_path / "duck" / "test"
    touch(test / "good", "0.png", "1.png")
    touch(test / "Burrs", "0.png")
    touch(test / "Stains", "0.png", "notes.txt")
    touch(tmp_path / "scratches", "a.jpg", "b.jpg")
    found = anomalous_files([test, tmp_path / "scratches"])
    relative = [p.relative_to(tmp_path).as_posix() for p in found]
    assert relative == [
        "duck/test/Burrs/0.png", "duck/test/Stains/0.png", "scratches/a.jpg", "scratches/b.jpg",
    ]  # fmt: skip


def test_a_folder_with_no_defect_images_is_one_sentence(tmp_path: Path) -> None:
    touch(tmp_path / "only-good" / "good", "0.png")
    with pytest.raises(UserError, match=r"only-good holds no images .* other than good"):
        anomalous_files([tmp_path / "only-good"])
    with pytest.raises(UserError, match=r"anomalous folder .*gone does not exist"):
        anomalous_files([tmp_path / "gone"])
