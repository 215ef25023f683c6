"""User meshes in every supported format render; broken ones give one clear sentence."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import PIL.Image
import pybullet
import pytest
import trimesh

from padformer_edge.errors import UserError
from padformer_edge_training.synth import BUILTINS, ViewCounts, builtin_names, render_dataset
from padformer_edge_training.synth.camera import FOV_DEGREES, sample_pose
from padformer_edge_training.synth.loaders import load_model, read_parts
from padformer_edge_training.synth.renderer import MAX_FACES_PER_BODY, Renderer

SMALL = ViewCounts(train=3, test_per_defect=1, test_good=1)
RED, BLUE = (220, 30, 30), (30, 30, 220)


def _textured_box() -> trimesh.Trimesh:
    """A box whose every face maps the left (red) and right (blue) halves of a texture."""
    box = trimesh.creation.box(extents=(1.0, 0.6, 0.4))
    corners = box.vertices[box.faces].reshape(-1, 3)
    box = trimesh.Trimesh(corners, np.arange(len(corners)).reshape(-1, 3), process=False)
    uv = np.tile([[0.05, 0.1], [0.95, 0.1], [0.95, 0.9]], (len(box.faces), 1))
    texture = np.zeros((32, 32, 3), np.uint8)
    texture[:, :16], texture[:, 16:] = RED, BLUE
    box.visual = trimesh.visual.TextureVisuals(uv=uv, image=PIL.Image.fromarray(texture))
    return box


def test_a_user_textured_obj_renders_with_its_texture(tmp_path: Path) -> None:
    (tmp_path / "part").mkdir()
    _textured_box().export(tmp_path / "part" / "bracket.obj")
    assert (tmp_path / "part" / "material.mtl").is_file()
    out = render_dataset([str(tmp_path / "part" / "bracket.obj")], tmp_path / "ds", SMALL, 64)
    pixels = np.concatenate(
        [cv2.imread(str(p))[..., ::-1].reshape(-1, 3) for p in out.glob("bracket/train/good/*")]
    ).astype(int)
    reddish = (pixels[:, 0] > 2 * pixels[:, 2] + 20).sum()
    bluish = (pixels[:, 2] > 2 * pixels[:, 0] + 20).sum()
    assert reddish > 20 and bluish > 20, "the texture's two colours must both show"
    assert len(list(out.glob("bracket/ground_truth/*/0_mask.png"))) == 3


@pytest.mark.parametrize("suffix", ["stl", "ply", "glb"])
def test_other_formats_load(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"box.{suffix}"
    _textured_box().export(path)
    model = load_model(str(path))
    assert model.name == "box" and model.face_count == 12
    radius = max(np.linalg.norm(p.vertices, axis=1).max() for p in model.parts)
    assert np.isclose(radius, 1.0)
    if suffix == "glb":
        assert model.parts[0].texture is not None


def test_builtins_are_stable_and_all_load() -> None:
    assert builtin_names()[:6] == ["duck", "soccerball", "teddy", "bunny", "mug", "lego"]
    assert {"r2d2", "torus"} <= set(BUILTINS)
    for name in builtin_names():
        model = load_model(f"builtin:{name}")
        assert model.name == name and model.face_count > 0


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("make_spec", "message"),
    [
        (lambda d: str(d / "nowhere.obj"), "does not exist"),
        (lambda d: _write(d / "notes.txt", "hello"), "unsupported type"),
        (lambda d: _write(d / "points.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\n"), "no triangles"),
        (lambda d: _write(d / "broken.glb", "this is not a glTF file"), "cannot be read"),
        (lambda d: "builtin:spaceship", "unknown built-in model"),
    ],
)
def test_bad_meshes_are_one_clear_sentence(tmp_path: Path, make_spec, message: str) -> None:
    with pytest.raises(UserError, match=message) as caught:
        render_dataset([make_spec(tmp_path)], tmp_path / "out", SMALL, 48)
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_bad_requests_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="same class"):
        render_dataset(["builtin:mug", "builtin:mug"], tmp_path / "out", SMALL, 48)
    with pytest.raises(UserError, match="--size"):
        render_dataset(["builtin:mug"], tmp_path / "out", SMALL, size=8)
    with pytest.raises(UserError, match="at least 1"):
        render_dataset(["builtin:mug"], tmp_path / "out", ViewCounts(0, 1, 1), 48)


def test_a_urdf_is_rebuilt_where_pybullet_itself_draws_it() -> None:
    """Links, joint frames and visual offsets: compare silhouettes with pybullet's own render."""
    path = BUILTINS["r2d2"].path
    points = np.concatenate([p.vertices for p in read_parts(path)])
    centre = (points.min(axis=0) + points.max(axis=0)) / 2
    scale = np.linalg.norm(points - centre, axis=1).max()
    model, rng, size = load_model("builtin:r2d2"), np.random.default_rng(5), 96
    client = pybullet.connect(pybullet.DIRECT)
    try:
        pybullet.loadURDF(str(path), physicsClientId=client)
        projection = pybullet.computeProjectionMatrixFOV(
            FOV_DEGREES, 1.0, 0.05 * scale, 10 * scale, physicsClientId=client
        )
        with Renderer(size) as renderer:
            for _ in range(3):
                pose = sample_pose(rng)
                ours = renderer.render([model], pose).covered
                camera = pose.camera_to_world.copy()
                camera[:3, 3] = camera[:3, 3] * scale + centre
                view = np.linalg.inv(camera).T.ravel().tolist()
                segmentation = pybullet.getCameraImage(
                    size, size, view, projection, renderer=pybullet.ER_TINY_RENDERER,
                    physicsClientId=client,
                )[4]  # fmt: skip
                theirs = np.asarray(segmentation).reshape(size, size) >= 0
                assert (ours & theirs).sum() / (ours | theirs).sum() > 0.95
    finally:
        pybullet.disconnect(client)


def test_a_mesh_beyond_pybullets_vertex_limit_still_renders(tmp_path: Path) -> None:
    """A dense CAD export (330k triangles) is split over several pybullet bodies."""
    path = tmp_path / "dense.stl"
    trimesh.creation.icosphere(7).export(path)
    model = load_model(str(path))
    assert model.face_count > 3 * MAX_FACES_PER_BODY
    with Renderer(48) as renderer:
        frame = renderer.render([model], sample_pose(np.random.default_rng(0)))
    # the unit sphere seen from 1.0-1.2x the distance that fits it covers 52-79 % of the view
    assert 0.45 < frame.covered.mean() < 0.8
