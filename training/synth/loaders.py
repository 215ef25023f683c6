"""Read a model from a mesh file, a URDF or a built-in name into a normalised Model3D.

OBJ (+MTL and texture), STL, PLY and GLB/GLTF go through trimesh. A URDF is loaded by
pybullet itself (it resolves packages, scales and joint frames exactly as it would for a
robot) and its visual shapes are read back as parts in their rest pose.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pybullet
import trimesh

from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge_training.synth.builtins import BUILTINS, Builtin
from padformer_edge_training.synth.model3d import Model3D, Part, normalised, part_from_trimesh
from padformer_edge_training.synth.procedural import (
    class_name,
    is_procedural,
    load_procedural,
    model_digest,
    parse_spec,
)

MESH_SUFFIXES = (".obj", ".stl", ".ply", ".glb", ".gltf", ".off")
BUILTIN_PREFIX = "builtin:"


def resolve_spec(spec: str) -> tuple[str, Path, Builtin | None]:
    """Turn ``builtin:NAME`` or a path into (class name, file, builtin entry or None)."""
    if spec.startswith(BUILTIN_PREFIX):
        name = spec.removeprefix(BUILTIN_PREFIX)
        if name not in BUILTINS:
            known = ", ".join(BUILTINS)
            raise UserError(f"unknown built-in model '{name}'; choose one of: {known}.")
        return name, BUILTINS[name].path, BUILTINS[name]
    path = Path(spec)
    if not path.is_file():
        raise UserError(f"mesh file {path} does not exist; check the path or use builtin:NAME.")
    suffix = path.suffix.lower()
    if suffix not in (*MESH_SUFFIXES, ".urdf"):
        supported = ", ".join(s.lstrip(".").upper() for s in (*MESH_SUFFIXES, ".urdf"))
        raise UserError(f"mesh file {path} has an unsupported type; use one of {supported}.")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", path.stem) or "object"
    return name, path, None


def file_digest(path: Path) -> str:
    """sha256 of the mesh file, so a dataset records exactly which geometry it shows."""
    return file_sha256(path)


def spec_identity(spec: str) -> tuple[str, str]:
    """(class name, sha256) of a spec: of the mesh file, or of a procedural object's arrays."""
    if is_procedural(spec):
        return class_name(*parse_spec(spec)), model_digest(load_procedural(spec))
    name, path, _ = resolve_spec(spec)
    return name, file_digest(path)


def load_model(spec: str) -> Model3D:
    """Load ``builtin:NAME``, ``procedural:SEED:INDEX`` or a mesh/URDF path; every failure
    is a one-line UserError."""
    if is_procedural(spec):
        return load_procedural(spec)
    name, path, builtin = resolve_spec(spec)
    color = builtin.color if builtin else None
    try:
        parts = read_parts(path, color)
    except UserError:
        raise
    except Exception as err:  # trimesh and pybullet raise many types for broken files
        raise UserError(f"mesh file {path} cannot be read ({err}); export it again.") from err
    parts = [p for p in parts if len(p.faces)]
    if not parts or sum(p.area for p in parts) <= 0:
        raise UserError(f"mesh file {path} contains no triangles; export the part with faces.")
    return normalised(name, parts)


def read_parts(path: Path, color: tuple[float, float, float, float] | None = None) -> list[Part]:
    """The parts of a mesh file or URDF in the file's own units and frame."""
    return _urdf_parts(path) if path.suffix.lower() == ".urdf" else _mesh_parts(path, color)


def _mesh_parts(path: Path, color: tuple[float, float, float, float] | None) -> list[Part]:
    scene = trimesh.load(path, force="scene")
    meshes = [g for g in scene.dump() if isinstance(g, trimesh.Trimesh)]
    return [part_from_trimesh(m, color) for m in meshes if len(m.faces)]


def _primitive(geometry: int, dims: tuple[float, ...], mesh_file: bytes) -> list[Part]:
    """Parts of one URDF visual in its local frame (meshes may bring several materials)."""
    if geometry == pybullet.GEOM_BOX:
        return [part_from_trimesh(trimesh.creation.box(extents=dims[:3]))]
    if geometry == pybullet.GEOM_SPHERE:
        return [part_from_trimesh(trimesh.creation.icosphere(3, radius=dims[0]))]
    if geometry == pybullet.GEOM_CYLINDER:
        return [part_from_trimesh(trimesh.creation.cylinder(dims[1], dims[0], sections=32))]
    if geometry == pybullet.GEOM_CAPSULE:
        return [part_from_trimesh(trimesh.creation.capsule(dims[0], dims[1]))]
    if geometry == pybullet.GEOM_MESH and mesh_file:
        parts = _mesh_parts(Path(mesh_file.decode()), None)
        return [
            p.with_geometry(p.vertices * np.asarray(dims[:3]), p.faces, p.normals, p.uv)
            for p in parts
        ]
    return []


def _pose_matrix(position: tuple[float, ...], orientation: tuple[float, ...]) -> np.ndarray:
    matrix = np.eye(4)
    matrix[:3, :3] = np.asarray(pybullet.getMatrixFromQuaternion(orientation)).reshape(3, 3)
    matrix[:3, 3] = position
    return matrix


def _link_frame(body: int, link: int, client: int) -> np.ndarray:
    """World pose of a URDF link frame, the frame pybullet's visual offsets are given in.

    pybullet tracks bodies by their centre of mass; the link frame is that pose composed
    with the inverse of the link's local inertial frame.
    """
    if link >= 0:
        return _pose_matrix(*pybullet.getLinkState(body, link, physicsClientId=client)[4:6])
    centre_of_mass = pybullet.getBasePositionAndOrientation(body, physicsClientId=client)
    inertial = pybullet.getDynamicsInfo(body, -1, physicsClientId=client)[3:5]
    return _pose_matrix(*centre_of_mass) @ np.linalg.inv(_pose_matrix(*inertial))


def _urdf_parts(path: Path) -> list[Part]:
    client = pybullet.connect(pybullet.DIRECT)
    try:
        try:
            body = pybullet.loadURDF(str(path.resolve()), physicsClientId=client)
        except pybullet.error as err:
            raise UserError(f"URDF {path} cannot be loaded ({err}); check the file.") from err
        parts: list[Part] = []
        for shape in pybullet.getVisualShapeData(body, physicsClientId=client):
            link, geometry, dims, mesh_file, local_pos, local_orn, rgba = shape[1:8]
            world = _link_frame(body, link, client) @ _pose_matrix(local_pos, local_orn)
            for part in _primitive(geometry, dims, mesh_file):
                # a textured mesh keeps its own colours; primitives take the URDF's rgba
                colour = part.color if part.texture is not None else tuple(map(float, rgba))
                parts.append(
                    replace(
                        part,
                        vertices=part.vertices @ world[:3, :3].T + world[:3, 3],
                        normals=part.normals @ world[:3, :3].T,
                        color=colour,
                    )
                )
        return parts
    finally:
        pybullet.disconnect(client)
