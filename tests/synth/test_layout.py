"""The rendered folder is a MAD-Sim dataset: layout, names, image formats, masks, poses."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np

from padformer_edge_training.synth import DEFECT_KINDS
from padformer_edge_training.synth.dataset import min_mask_pixels
from tests.synth.conftest import TINY, TINY_MESHES, TINY_SIZE


def _expected_files(name: str) -> set[str]:
    files = {f"{name}/transforms.json"}
    files |= {f"{name}/train/good/{n}.png" for n in range(TINY.train)}
    files |= {f"{name}/test/good/{n}.png" for n in range(TINY.test_good)}
    for kind in DEFECT_KINDS:
        files |= {f"{name}/test/{kind}/{n}.png" for n in range(TINY.test_per_defect)}
        files |= {f"{name}/ground_truth/{kind}/{n}_mask.png" for n in range(TINY.test_per_defect)}
    return files


def test_layout_and_file_names_follow_mad_sim(tiny_dataset: Path) -> None:
    found = {p.relative_to(tiny_dataset).as_posix() for p in tiny_dataset.rglob("*") if p.is_file()}
    expected = {"dataset.json"} | _expected_files("duck") | _expected_files("r2d2")
    assert found == expected
    assert not (tiny_dataset / "duck" / "ground_truth" / "good").exists()
    assert sorted(DEFECT_KINDS) == ["Burrs", "Missing", "Stains"]


def test_images_are_rgb_at_the_requested_size(tiny_dataset: Path) -> None:
    for path in tiny_dataset.rglob("*.png"):
        if path.name.endswith("_mask.png"):
            continue
        image = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        assert image.shape == (TINY_SIZE, TINY_SIZE, 3), path
        assert (image == 255).all(axis=2).any(), f"{path} shows no white background"
        assert not (image == 255).all(), f"{path} shows no object"


def test_masks_are_binary_and_large_enough(tiny_dataset: Path) -> None:
    masks = list(tiny_dataset.rglob("*_mask.png"))
    assert len(masks) == len(TINY_MESHES) * len(DEFECT_KINDS) * TINY.test_per_defect
    for path in masks:
        mask = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        assert mask.shape == (TINY_SIZE, TINY_SIZE) and mask.dtype == np.uint8
        assert set(np.unique(mask)) <= {0, 255}
        assert (mask == 255).sum() >= min_mask_pixels(TINY_SIZE), path


def test_transforms_hold_a_rigid_pose_for_every_image(tiny_dataset: Path) -> None:
    transforms = json.loads((tiny_dataset / "duck" / "transforms.json").read_text())
    assert 0 < transforms["camera_angle_x"] < np.pi
    paths = [f["file_path"] for f in transforms["frames"]]
    images = {
        p.relative_to(tiny_dataset / "duck").with_suffix("").as_posix()
        for p in (tiny_dataset / "duck").glob("t*/*/*.png")
    }
    assert sorted(paths) == sorted(images)
    for frame in transforms["frames"]:
        matrix = np.asarray(frame["transform_matrix"])
        rotation = matrix[:3, :3]
        assert np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-5)
        assert np.isclose(np.linalg.det(rotation), 1.0, atol=1e-5)
        assert np.allclose(matrix[3], [0, 0, 0, 1])
        # the camera looks down its -z axis at the object in the middle of the unit sphere
        position, forward = matrix[:3, 3], -rotation[:, 2]
        assert np.linalg.norm(position) > 1.0
        assert np.allclose(forward, -position / np.linalg.norm(position), atol=1e-5)


def test_manifest_says_how_the_dataset_was_made(tiny_dataset: Path) -> None:
    manifest = json.loads((tiny_dataset / "dataset.json").read_text())
    assert manifest["seed"] == 0 and manifest["size"] == TINY_SIZE
    assert [c["mesh"] for c in manifest["classes"]] == list(TINY_MESHES)
    assert all(len(c["sha256"]) == 64 for c in manifest["classes"])
    assert manifest["counts"] == {"train_good": 4, "test_good": 2, "test_per_defect": 3}
    assert manifest["renderer"]["name"] == "pybullet TinyRenderer"
