"""The three MAD-Sim defect kinds, built in 3D so that every view of one defect agrees.

Each generator returns a ``DefectScene``: what the clean object looks like (``clean``) and
what the defective one looks like (``defective``), as lists of models rendered together.
The ground-truth mask is whatever differs between the two renders of the same pose, so
a generator only has to make the geometry right, never the mask.

Sizes are fractions of the unit bounding sphere every model is scaled into. The anchor
point is drawn among surface points that face the camera, so most draws are visible;
the caller re-draws the rest.
"""

from __future__ import annotations

import colorsys
import math
from dataclasses import dataclass

import numpy as np
import trimesh

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.model3d import Model3D, Part

DEFECT_KINDS = ("Burrs", "Missing", "Stains")
STAIN_LIFT = 0.004  # decal height above the surface: above depth noise, far below a pixel
FACING = 0.35  # cosine between the surface normal and the direction to the camera


@dataclass(frozen=True)
class DefectScene:
    clean: list[Model3D]
    defective: list[Model3D]


@dataclass(frozen=True)
class Anchor:
    part: int
    point: np.ndarray
    normal: np.ndarray
    vertex: int  # nearest vertex of the part, for the surface colour there


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=-1, keepdims=True).clip(1e-12)


def sample_anchor(model: Model3D, pose: CameraPose, rng: np.random.Generator) -> Anchor:
    """A random surface point, area-weighted, preferring points that face the camera.

    Points seen at a grazing angle would give a sliver of a defect that no inspector
    could judge, so up to 32 draws look for one within about 70 degrees of the view axis.
    """
    areas = np.array([p.area for p in model.parts])
    candidates = []
    for _ in range(32):
        index = int(rng.choice(len(model.parts), p=areas / areas.sum()))
        part = model.parts[index]
        triangles = part.vertices[part.faces]
        face_areas = trimesh.triangles.area(triangles)
        face = int(rng.choice(len(face_areas), p=face_areas / face_areas.sum()))
        a, b = rng.uniform(size=2)
        if a + b > 1.0:
            a, b = 1.0 - a, 1.0 - b
        corner = triangles[face]
        point = corner[0] + a * (corner[1] - corner[0]) + b * (corner[2] - corner[0])
        normal = _unit(np.cross(corner[1] - corner[0], corner[2] - corner[0]))
        if np.dot(normal, part.normals[part.faces[face]].sum(axis=0)) < 0:
            normal = -normal  # trust the shading normals' side when winding disagrees
        vertex = int(part.faces[face][np.argmin(np.linalg.norm(corner - point, axis=1))])
        anchor = Anchor(index, point, normal, vertex)
        if np.dot(normal, _unit(pose.position - point)) > FACING:
            return anchor
        candidates.append(anchor)
    return candidates[0]


def refine_near(part: Part, centre: np.ndarray, reach: float, max_edge: float) -> Part:
    """Split edges longer than ``max_edge`` near ``centre`` so a cut can follow the surface.

    trimesh's ``subdivide_to_size`` bisects every edge whose first three columns are
    farther apart than ``max_edge``, at one midpoint shared by both faces, so no crack
    opens, and averages all other columns at that midpoint. We give it positions clamped
    to the ball of radius ``reach`` as those three columns: edges far away shrink and are
    left alone, while the real position, normal and UV ride along in the other columns and
    are interpolated. A refined but uncut surface therefore renders like the original.
    """
    offset = part.vertices - centre
    distance = np.linalg.norm(offset, axis=1, keepdims=True)
    clamped = centre + offset * np.minimum(1.0, reach / distance.clip(1e-12))
    columns = [clamped, part.vertices, part.normals]
    columns += [part.uv] if part.uv is not None else []
    points, faces = trimesh.remesh.subdivide_to_size(
        np.hstack(columns), part.faces, max_edge, max_iter=16
    )
    uv = points[:, 9:11] if part.uv is not None else None
    return part.with_geometry(points[:, 3:6], faces, points[:, 6:9], uv)


def _touches(part: Part, centre: np.ndarray, radius: float) -> bool:
    lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
    return bool(np.linalg.norm(centre - np.clip(centre, lo, hi)) <= radius)


def _random_colour(rng: np.random.Generator) -> tuple[float, float, float, float]:
    """Saturated, mid-to-dark colours: oil, rust, ink and paint rather than pastel dust."""
    r, g, b = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(0.5, 1.0), rng.uniform(0.15, 0.75))
    return (r, g, b, 1.0)


def make_stain(model: Model3D, pose: CameraPose, rng: np.random.Generator) -> DefectScene:
    """An irregular coloured blob lying on the surface, as a decal lifted along the normals."""
    anchor = sample_anchor(model, pose, rng)
    radius = rng.uniform(0.09, 0.2)
    harmonics = [(k, rng.uniform(0.06, 0.18), rng.uniform(0, 2 * math.pi)) for k in (2, 3, 5)]
    tangent = _unit(np.cross(anchor.normal, rng.normal(size=3)))
    bitangent = np.cross(anchor.normal, tangent)
    colour = _random_colour(rng)
    decals = []
    for part in model.parts:
        if not _touches(part, anchor.point, radius * 1.4):
            continue
        fine = refine_near(part, anchor.point, radius * 1.5, radius / 4)
        centres = fine.vertices[fine.faces].mean(axis=1)
        offset = centres - anchor.point
        angle = np.arctan2(offset @ bitangent, offset @ tangent)
        reach = radius * (1 + sum(a * np.sin(k * angle + phase) for k, a, phase in harmonics))
        face_normals = fine.normals[fine.faces].mean(axis=1)
        inside = (np.linalg.norm(offset, axis=1) < reach) & (face_normals @ anchor.normal > 0.2)
        if not inside.any():
            continue
        used, faces = np.unique(fine.faces[inside], return_inverse=True)
        lifted = fine.vertices[used] + STAIN_LIFT * fine.normals[used]
        decals.append(Part(lifted, faces.reshape(-1, 3), fine.normals[used], color=colour))
    return DefectScene([model], [model, model.with_parts(decals)])


def make_burr(model: Model3D, pose: CameraPose, rng: np.random.Generator) -> DefectScene:
    """A cluster of one to four spikes and lumps growing out of the surface, in its colour."""
    anchor = sample_anchor(model, pose, rng)
    base_colour = model.parts[anchor.part].color_at_vertex(anchor.vertex)
    pieces = []
    for _ in range(int(rng.integers(1, 5))):
        height = rng.uniform(0.14, 0.3)
        if rng.uniform() < 0.6:
            piece = trimesh.creation.cone(height * rng.uniform(0.25, 0.4), height, sections=12)
        else:
            piece = trimesh.creation.icosphere(2, radius=height * 0.5)
            piece.apply_scale([1.0, rng.uniform(0.6, 1.0), rng.uniform(0.7, 1.2)])
        piece.apply_translation([0.0, 0.0, -0.15 * height])  # root it below the surface
        axis = _unit(anchor.normal + 0.5 * rng.normal(size=3))
        rotation = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], axis)
        spread = 0.06 * (rng.uniform(size=3) - 0.5)
        rotation[:3, 3] = anchor.point + spread - np.dot(spread, anchor.normal) * anchor.normal
        piece.apply_transform(rotation)
        shade = np.clip(base_colour * rng.uniform(0.75, 1.05), 0.0, 1.0)
        pieces.append(
            Part(
                np.asarray(piece.vertices),
                np.asarray(piece.faces, dtype=np.int64),
                np.asarray(piece.vertex_normals),
                color=(*shade, 1.0),
            )
        )
    return DefectScene([model], [model, model.with_parts(pieces)])


def _inner_wall(part: Part, colour: np.ndarray) -> Part:
    """The part's surface seen from inside: reversed winding, inverted normals, darker.

    The renderer culls back faces, so a hole in a closed shell would show the background
    through a solid object. With this wall behind it, the hole shows the inside of the
    part instead; from outside the wall is always back-facing and draws nothing.
    """
    return Part(part.vertices, part.faces[:, ::-1].copy(), -part.normals, color=(*colour, 1.0))


def make_missing(model: Model3D, pose: CameraPose, rng: np.random.Generator) -> DefectScene:
    """A chunk carved out: every triangle inside a ball around a surface point is removed.

    The clean reference is the refined, uncut model with the same inner walls, so the mask
    holds the cut only and not the (invisible) change in triangulation.
    """
    anchor = sample_anchor(model, pose, rng)
    inside = 0.55 * model.parts[anchor.part].color_at_vertex(anchor.vertex)
    radius = rng.uniform(0.12, 0.25)
    centre = anchor.point - rng.uniform(0.0, 0.4) * radius * anchor.normal
    refined, cut = [], []
    for part in model.parts:
        if not _touches(part, centre, radius):
            refined.append(part)
            cut.append(part)
            continue
        fine = refine_near(part, centre, radius * 1.2, radius / 4)
        keep = np.linalg.norm(fine.vertices[fine.faces].mean(axis=1) - centre, axis=1) > radius
        wall = _inner_wall(fine, inside)
        refined += [fine, wall]
        cut += [fine.with_geometry(fine.vertices, fine.faces[keep], fine.normals, fine.uv), wall]
    return DefectScene([model.with_parts(refined)], [model.with_parts(cut)])


GENERATORS = {"Burrs": make_burr, "Missing": make_missing, "Stains": make_stain}
