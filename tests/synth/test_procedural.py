"""Procedural objects: seeded to the byte, every one renderable with visible, masked defects."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from padformer_edge.errors import UserError
from padformer_edge_training.synth import DEFECT_KINDS, ViewCounts, procedural_specs, render_dataset
from padformer_edge_training.synth.camera import sample_pose
from padformer_edge_training.synth.dataset import MAX_DRAWS, min_mask_pixels, render_defect_view
from padformer_edge_training.synth.model3d import MATTE
from padformer_edge_training.synth.procedural import build_object, parse_spec
from padformer_edge_training.synth.renderer import Renderer
from tests.cli_process import run_cli

SMALL = ViewCounts(train=2, test_per_defect=1, test_good=1)
OBJECTS = 8  # covers every body primitive, textures, glossy parts and attachments at seed 0
SIZE = 64


def _files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def procedural_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("procedural") / "ds"
    return render_dataset(procedural_specs(3, seed=5), out, SMALL, size=48, seed=5)


def test_same_seed_gives_identical_files(procedural_dataset: Path, tmp_path: Path) -> None:
    again = render_dataset(procedural_specs(3, seed=5), tmp_path / "again", SMALL, 48, seed=5)
    assert _files(again) == _files(procedural_dataset)


def test_the_dataset_has_the_usual_layout_and_records_the_objects(
    procedural_dataset: Path,
) -> None:
    manifest = json.loads((procedural_dataset / "dataset.json").read_text())
    names = [c["name"] for c in manifest["classes"]]
    assert names == ["procedural-5-000", "procedural-5-001", "procedural-5-002"]
    assert [c["mesh"] for c in manifest["classes"]] == procedural_specs(3, seed=5)
    assert len({c["sha256"] for c in manifest["classes"]}) == 3
    for name in names:
        for kind in DEFECT_KINDS:
            mask = cv2.imread(str(procedural_dataset / name / "ground_truth" / kind / "0_mask.png"))
            assert mask is not None and mask.max() == 255
        image = cv2.imread(str(procedural_dataset / name / "train" / "good" / "0.png"))
        assert image.shape == (48, 48, 3) and (image != 255).any()


def test_objects_depend_on_seed_and_index_only() -> None:
    assert procedural_specs(5, seed=2)[:3] == procedural_specs(3, seed=2)
    first, again = build_object(2, 1), build_object(2, 1)
    assert len(first.parts) == len(again.parts)
    for a, b in zip(first.parts, again.parts, strict=True):
        assert np.array_equal(a.vertices, b.vertices) and np.array_equal(a.faces, b.faces)
    other_index, other_seed = build_object(2, 2), build_object(3, 1)
    assert first.face_count != other_index.face_count or not np.array_equal(
        first.parts[0].vertices, other_index.parts[0].vertices
    )
    assert not np.array_equal(first.parts[0].vertices[:10], other_seed.parts[0].vertices[:10])


def test_the_generator_varies_shape_surface_and_gloss() -> None:
    objects = [build_object(0, i) for i in range(OBJECTS)]
    parts = [p for m in objects for p in m.parts]
    assert any(p.texture is not None for p in parts) and any(p.texture is None for p in parts)
    assert any(p.specular > MATTE for p in parts) and any(p.specular == MATTE for p in parts)
    assert any(len(m.parts) > 1 for m in objects) and any(len(m.parts) == 1 for m in objects)
    assert len({m.face_count for m in objects}) > OBJECTS // 2
    for model in objects:
        radius = max(np.linalg.norm(p.vertices, axis=1).max() for p in model.parts)
        assert radius == pytest.approx(1.0)


def test_every_object_renders_with_visible_masked_defects() -> None:
    needed = min_mask_pixels(SIZE)
    with Renderer(SIZE) as renderer:
        for index in range(OBJECTS):
            model = build_object(0, index)
            rng = np.random.default_rng(index)
            good = renderer.render([model], sample_pose(rng))
            assert good.covered.sum() > 0.05 * SIZE * SIZE, f"object {index} barely shows"
            for kind in DEFECT_KINDS:
                for _ in range(MAX_DRAWS):
                    plain, defective, mask = render_defect_view(
                        renderer, model, kind, sample_pose(rng), rng
                    )
                    if mask.sum() >= needed:
                        break
                else:
                    pytest.fail(f"object {index}: no visible {kind} in {MAX_DRAWS} draws")
                changed = (plain.rgb != defective.rgb).any(axis=2)
                assert changed[mask].mean() > 0.5, f"object {index} {kind}: mask not visible"
                assert not changed[~mask].any(), f"object {index} {kind}: change outside mask"
            renderer.clear()


def test_a_glossy_part_gets_a_highlight_and_leaves_matte_parts_alone() -> None:
    model = build_object(0, 1)
    glossy = [p for p in model.parts if p.specular > MATTE]
    assert glossy and len(glossy) < len(model.parts)
    dull = model.with_parts([p.with_specular(MATTE) for p in model.parts])
    pose = sample_pose(np.random.default_rng(1))
    with Renderer(SIZE) as renderer:
        shiny_frame, dull_frame = renderer.render([model], pose), renderer.render([dull], pose)
    assert np.array_equal(shiny_frame.covered, dull_frame.covered)
    brighter = shiny_frame.rgb.astype(int).sum(axis=2) - dull_frame.rgb.astype(int).sum(axis=2)
    assert brighter.min() >= 0 and brighter.max() > 30


def test_a_bad_spec_is_one_sentence() -> None:
    with pytest.raises(UserError, match="procedural:SEED:INDEX"):
        parse_spec("procedural:seven")
    with pytest.raises(UserError, match="out of range"):
        procedural_specs(0, seed=1)


def test_cli_renders_procedural_objects_beside_a_mesh(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = run_cli(
        "--log-format", "json", "synth", "--procedural", "2", "--seed", "4",
        "--mesh", "builtin:lego", "--out", str(out), "--train-views", "1",
        "--test-views-per-defect", "1", "--good-test-views", "1", "--size", "64",
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "3 class(es)" in result.stdout
    folders = sorted(p.name for p in out.iterdir() if p.is_dir())
    assert folders == ["lego", "procedural-4-000", "procedural-4-001"]
    bad = run_cli("synth", "--procedural", "-1", "--out", str(tmp_path / "x"), timeout=600)
    assert bad.returncode == 2 and "out of range" in bad.stderr
