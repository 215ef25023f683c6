"""Bent: one end of the part bent out of line about a hinge, as a knocked flange or a
warped moulding is.

This is the unseen-kind family (``families``): nothing a generator draws, and no training
kind, is shaped like it. It adds no material and paints no patch: a whole end of the
part turns a little, so its outline, its shading and where its texture lies all move
together, starting at a smooth crease.

The end is everything beyond a plane across the part (the hinge plane); it turns about
a line in that plane through the middle of the part's cross-section there. The angle
grows smoothly from nothing at the plane to its full value a short way past it (the
bend zone), and the rest of the end turns rigidly. Every vertex moves by a function of
its position only, so co-located vertices (a box's creased edges) move alike and the
surface never tears. The clean scene is the refined, unbent model, so the mask holds the
bend and not the (invisible) change in triangulation.
"""

from __future__ import annotations

import math

import numpy as np
import trimesh

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.defects import DefectScene
from padformer_edge_training.synth.model3d import Model3D, Part
from padformer_edge_training.synth.surface import displaced, unit

END = (0.15, 0.8)  # how far the bent end reaches past the hinge plane, of the unit sphere
ANGLE_DEGREES = (6.0, 30.0)  # a slight warp to a plainly bent tab
MOST_DEGREES = 45.0  # the pixel floor never bends further than this
ZONE = (0.15, 0.5)  # the bend zone's width as a share of the end's reach
SMALLEST_PIXELS = 4  # the end's farthest point moves at least this many pixels
SHORTEST_PART = 0.6  # the part is at least this long along the bend (else re-draw it)
SIDEWAYS = 0.5  # |cosine| between the bend direction and the view axis, at most
DIRECTION_TRIES = 24
SPLITS_PER_ZONE = 6  # edges across the bend zone are split to a sixth of its width


def _rotate(points: np.ndarray, axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Each point (relative to a point of the axis) turned about unit ``axis`` by its angle
    (Rodrigues' formula, one angle per point)."""
    cos, sin = np.cos(angles)[:, None], np.sin(angles)[:, None]
    along = (points @ axis)[:, None] * axis[None]
    return points * cos + np.cross(axis[None], points) * sin + along * (1.0 - cos)


def _ramp(fraction: np.ndarray) -> np.ndarray:
    """0 before the zone, 1 past it, smooth with zero slope at both ends: no hard kink."""
    u = np.clip(fraction, 0.0, 1.0)
    return u * u * (3.0 - 2.0 * u)


def _direction(points: np.ndarray, pose: CameraPose, rng: np.random.Generator) -> np.ndarray:
    """The direction the bent end points along: one across the view (an end pointing at
    or away from the camera would hide its bend), along which the part is long enough to
    have an end to bend. Falls back to the longest direction tried."""
    view = unit(pose.position)
    best, best_length = None, -1.0
    for _ in range(DIRECTION_TRIES):
        candidate = unit(rng.normal(size=3))
        if abs(float(candidate @ view)) > SIDEWAYS:
            continue
        along = points @ candidate
        length = float(along.max() - along.min())
        if length >= SHORTEST_PART:
            return candidate
        if length > best_length:
            best, best_length = candidate, length
    return best if best is not None else unit(np.cross(view, rng.normal(size=3)))


def _hinge_centre(model: Model3D, direction: np.ndarray, offset: float) -> np.ndarray:
    """The middle of the part's cross-section in the hinge plane (its outline's box centre):
    a bar bends about its middle, not about one face."""
    origin = offset * direction
    ends = []
    for part in model.parts:
        along = part.vertices @ direction
        if along.min() <= offset <= along.max():
            mesh = trimesh.Trimesh(part.vertices, part.faces, process=False)
            segments = trimesh.intersections.mesh_plane(mesh, direction, origin)
            ends.append(np.asarray(segments).reshape(-1, 3))
    found = np.concatenate(ends) if ends else np.zeros((0, 3))
    if not len(found):
        return origin
    centre = (found.min(axis=0) + found.max(axis=0)) / 2.0
    return centre - (centre @ direction - offset) * direction  # exactly in the plane


def _refined_across(part: Part, along: np.ndarray, zone: float) -> Part:
    """Split the edges that cross the bend zone until each spans a sixth of it along the
    bend, so the bend curves instead of stretching a long triangle.

    As ``defects.refine_near`` does, trimesh measures edges on stand-in positions while
    the real position, normal and UV ride along in the other columns: here the stand-in
    is the distance past the hinge plane clamped to the zone (and a step either side), so
    only edges across the zone are split and none elsewhere. An edge that keeps one
    distance turns rigidly (the rotation is linear along it) and needs no split.
    """
    step = zone / SPLITS_PER_ZONE
    stand_in = np.zeros_like(part.vertices)
    stand_in[:, 0] = np.clip(along, -step, zone + step)
    columns = [stand_in, part.vertices, part.normals]
    columns += [part.uv] if part.uv is not None else []
    points, faces = trimesh.remesh.subdivide_to_size(
        np.hstack(columns), part.faces, step, max_iter=24
    )
    uv = points[:, 9:11] if part.uv is not None else None
    return part.with_geometry(points[:, 3:6], faces, points[:, 6:9], uv)


def make_bent(
    model: Model3D, pose: CameraPose, rng: np.random.Generator, pixel: float = 0.0
) -> DefectScene:
    """Bend the end of the part beyond a hinge plane by a small angle about a line in it.
    ``pixel`` is the render's pixel size (``camera.pixel_size``), 0 for no floor: the
    angle grows until the end's farthest point moves that many pixels (up to 45 degrees)."""
    points = np.concatenate([part.vertices for part in model.parts])
    direction = _direction(points, pose, rng)
    along = points @ direction
    reach = min(rng.uniform(*END), 0.5 * float(along.max() - along.min()))
    hinge = float(along.max()) - reach
    zone = reach * rng.uniform(*ZONE)
    centre = _hinge_centre(model, direction, hinge)
    axis = unit(np.cross(direction, rng.normal(size=3)))  # any line across the bend
    end = points[along > hinge] - centre
    off_axis = np.linalg.norm(end - (end @ axis)[:, None] * axis[None], axis=1)
    farthest = float(off_axis.max(initial=0.0))
    floor = 2.0 * math.asin(min(1.0, SMALLEST_PIXELS * pixel / (2.0 * max(farthest, 1e-9))))
    angle = min(max(math.radians(rng.uniform(*ANGLE_DEGREES)), floor), math.radians(MOST_DEGREES))
    angle *= 1.0 if rng.uniform() < 0.5 else -1.0
    clean, bent = [], []
    for part in model.parts:
        past = part.vertices @ direction - hinge
        if past.max() <= 0.0:
            clean.append(part)
            bent.append(part)
            continue
        fine = _refined_across(part, past, zone) if past.min() < zone else part
        past = fine.vertices @ direction - hinge
        turned = np.zeros(len(fine.vertices))
        moving = past > 0.0
        turned[moving] = angle * _ramp(past[moving] / zone)
        moved = fine.vertices.copy()
        moved[moving] = centre + _rotate(fine.vertices[moving] - centre, axis, turned[moving])
        clean.append(fine)
        bent.append(displaced(fine, moved - fine.vertices))
    return DefectScene([model.with_parts(clean)], [model.with_parts(bent)])
