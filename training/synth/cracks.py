"""Cracks: a thin dark fissure with a small depth, running across the surface.

The fissure follows a jagged path walked over the part's surface from a point facing the
camera. Near the path the mesh is refined to a fraction of the crack's width; vertices
within half the width sink into a V-shaped groove and the faces of the groove turn
dark, as the shadowed inside of a real crack does.
"""

from __future__ import annotations

import numpy as np
import trimesh

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.defects import DefectScene, sample_anchor
from padformer_edge_training.synth.model3d import Model3D, Part
from padformer_edge_training.synth.surface import (
    displaced,
    faces_subset,
    nearest_on_path,
    recoloured,
    refine_along,
    touches,
    unit,
)

LENGTH = (0.15, 0.9)  # of the unit sphere: a short hairline to a crack across the part
WIDTH = (0.008, 0.06)  # a hairline is about one pixel wide at 256 px, the widest six
DEPTH = (0.5, 1.5)  # groove depth as a share of the width: shallow
THINNEST_PIXELS = 1.2  # the width is at least this many pixels of the render
SHORTEST_PIXELS = 15  # and the length at least this many
STEP = 0.03  # path step along the surface
JAGGEDNESS = 0.45  # how far each step's direction wanders
DARKNESS = (0.12, 0.35)  # the inside's colour as a share of the surface's
BACK_SIDE = -0.5  # vertices whose normal points further from the crack's are not moved


def _closest_on_part(part: Part, point: np.ndarray, reach: float) -> tuple[np.ndarray, np.ndarray]:
    """The surface point of ``part`` nearest ``point`` and its face normal (outward).

    Only triangles whose bounding box comes within ``reach`` are tried, so the cost does
    not grow with a dense mesh's size.
    """
    triangles = part.vertices[part.faces]
    lo, hi = triangles.min(axis=1), triangles.max(axis=1)
    near = np.linalg.norm(point - np.clip(point, lo, hi), axis=1) <= reach
    if not near.any():
        near[:] = True
    candidates = triangles[near]
    closest = trimesh.triangles.closest_point(
        candidates, np.repeat(point[None], len(candidates), 0)
    )
    best = int(np.linalg.norm(closest - point, axis=1).argmin())
    corner = candidates[best]
    normal = unit(np.cross(corner[1] - corner[0], corner[2] - corner[0]))
    shading = part.normals[part.faces[near][best]].sum(axis=0)
    return closest[best], normal if np.dot(normal, shading) >= 0 else -normal


def _walk(
    part: Part,
    start: np.ndarray,
    normal: np.ndarray,
    direction: np.ndarray,
    length: float,
    rng: np.random.Generator,
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Points and normals of a jagged path of about ``length`` over the part's surface."""
    points, normals = [start], [normal]
    for _ in range(max(2, int(np.ceil(length / STEP)))):
        direction = direction + JAGGEDNESS * rng.normal(size=3)
        direction = unit(direction - np.dot(direction, normal) * normal)
        point, normal = _closest_on_part(part, points[-1] + STEP * direction, 2 * STEP)
        points.append(point)
        normals.append(normal)
    return points, normals


def make_crack(
    model: Model3D, pose: CameraPose, rng: np.random.Generator, pixel: float = 0.0
) -> DefectScene:
    """Walk a path both ways from a surface point, then groove and darken along it.
    ``pixel`` is the render's pixel size (``camera.pixel_size``), 0 for no floor."""
    anchor = sample_anchor(model, pose, rng)
    host = model.parts[anchor.part]
    length = max(rng.uniform(*LENGTH), SHORTEST_PIXELS * pixel)
    width = max(rng.uniform(*WIDTH), THINNEST_PIXELS * pixel)
    depth = width * rng.uniform(*DEPTH)
    darkness = rng.uniform(*DARKNESS)
    heading = unit(np.cross(anchor.normal, rng.normal(size=3)))
    ahead, ahead_normals = _walk(host, anchor.point, anchor.normal, heading, length / 2, rng)
    back, back_normals = _walk(host, anchor.point, anchor.normal, -heading, length / 2, rng)
    path = np.asarray(back[:0:-1] + ahead)
    path_normals = np.asarray(back_normals[:0:-1] + ahead_normals)
    half = width / 2
    middle = (path.min(axis=0) + path.max(axis=0)) / 2
    extent = float(np.linalg.norm(path.max(axis=0) - path.min(axis=0))) / 2
    clean: list[Part] = []
    cracked: list[Part] = []
    for part in model.parts:
        if not touches(part, middle, extent + width):
            clean.append(part)
            cracked.append(part)
            continue
        fine = refine_along(part, path, 2 * width, half / 1.5)
        nearest, segment = nearest_on_path(fine.vertices, path)
        along = path_normals[segment]
        distance = np.linalg.norm(fine.vertices - nearest, axis=1)
        sinks = (distance < half) & ((fine.normals * along).sum(axis=1) > BACK_SIDE)
        sink = np.where(sinks, depth * (1.0 - distance / half), 0.0)
        grooved = displaced(fine, -sink[:, None] * along)
        inside = sinks[fine.faces].any(axis=1)  # every face of the groove, walls and lip
        clean.append(fine)
        cracked.append(faces_subset(grooved, ~inside))
        if inside.any():
            dark = np.asarray(part.color[:3]) * darkness
            cracked.append(recoloured(faces_subset(grooved, inside), dark))
    return DefectScene([model.with_parts(clean)], [model.with_parts(cracked)])
