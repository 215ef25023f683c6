"""Local surface edits shared by the newer defect kinds: move, recolour, refine along a path.

Every edit keeps the untouched part of a mesh bit-identical (same vertices, normals, UVs
and faces), so the clean and defective renders differ only where the defect is and the
mask stays exactly the changed pixels.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import trimesh

from padformer_edge_training.synth.model3d import Part

PATH_BLOCK = 16_384  # points per block when measuring distances to a path
COARSEST_EDGE = 0.08  # first stage of refining along a path, of the unit sphere


def unit(v: np.ndarray) -> np.ndarray:
    """Vectors scaled to length 1 along the last axis (zero vectors stay zero)."""
    return v / np.linalg.norm(v, axis=-1, keepdims=True).clip(1e-12)


def _face_normals_at_vertices(vertices: np.ndarray, faces: np.ndarray) -> np.ndarray:
    mesh = trimesh.Trimesh(vertices, faces, process=False)
    return np.asarray(mesh.vertex_normals, dtype=np.float64)


def displaced(part: Part, offsets: np.ndarray) -> Part:
    """The part with each vertex moved by ``offsets`` (n, 3) and its shading bent to match.

    A dent or groove seen head-on shows only through shading, so the normals of moved
    vertices turn by as much as the geometric normals there turned. The part's own
    normals (smooth or creased, as authored) stay the base, and vertices none of whose
    faces moved keep theirs bit for bit.
    """
    moved = part.vertices + offsets
    before = _face_normals_at_vertices(part.vertices, part.faces)
    after = _face_normals_at_vertices(moved, part.faces)
    change = after - before
    touched = np.abs(change).max(axis=1) > 0.0
    normals = part.normals.copy()
    normals[touched] = unit(part.normals[touched] + change[touched])
    return part.with_geometry(moved, part.faces, normals, part.uv)


def faces_subset(part: Part, chosen: np.ndarray) -> Part:
    """The chosen faces of a part as their own part (only the vertices they use)."""
    used, faces = np.unique(part.faces[chosen], return_inverse=True)
    uv = part.uv[used] if part.uv is not None else None
    return part.with_geometry(part.vertices[used], faces.reshape(-1, 3), part.normals[used], uv)


def recoloured(part: Part, rgb: np.ndarray) -> Part:
    """The same part drawn in another colour (a textured part is multiplied by it)."""
    return replace(part, color=(*np.clip(rgb, 0.0, 1.0).tolist(), 1.0))


def nearest_on_path(points: np.ndarray, path: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(closest point on the polyline ``path``, index of its segment) for every point.

    Points go in blocks so that a dense CAD mesh does not need a (points x segments x 3)
    array at once.
    """
    starts, ends = path[:-1], path[1:]
    along = ends - starts
    length2 = (along**2).sum(axis=1).clip(1e-18)
    nearest, segments = np.empty_like(points), np.empty(len(points), dtype=np.int64)
    for first in range(0, len(points), PATH_BLOCK):
        block = points[first : first + PATH_BLOCK]
        t = ((block[:, None, :] - starts[None]) * along[None]).sum(axis=2) / length2
        closest = starts[None] + t.clip(0.0, 1.0)[..., None] * along[None]
        segment = np.linalg.norm(block[:, None, :] - closest, axis=2).argmin(axis=1)
        nearest[first : first + len(block)] = closest[np.arange(len(block)), segment]
        segments[first : first + len(block)] = segment
    return nearest, segments


def refine_along(part: Part, path: np.ndarray, reach: float, max_edge: float) -> Part:
    """Split edges longer than ``max_edge`` within ``reach`` of a polyline on the surface.

    As ``defects.refine_near`` does for a ball, trimesh measures edges on positions pulled
    to within ``reach`` of their nearest path point, and position, normal and UV ride along
    in the other columns. A tube clamp also splits edges that run beside the path at any
    distance (their ends pull to different path points), so the edge size shrinks in
    stages, each over only the faces the previous stage left within ``reach`` plus its
    edge size. Where a stage's region ends an edge may be split on one side only; the
    pinholes this can open lie in the clean and the defective render alike, outside the
    mask, where the image takes the plain model's pixels.
    """
    size, margin = max(COARSEST_EDGE, max_edge), np.inf
    while True:
        # faces whose box misses the path's box (grown by the reach) are never split, so
        # only the vertices of the others need their distance to the path
        lo, hi = path.min(axis=0) - reach, path.max(axis=0) + reach
        corners = part.vertices[part.faces]
        boxed = ((corners.min(axis=1) <= hi) & (corners.max(axis=1) >= lo)).all(axis=1)
        used = np.unique(part.faces[boxed])
        nearest = part.vertices.copy()
        nearest[used] = nearest_on_path(part.vertices[used], path)[0]
        offset = part.vertices - nearest
        distance = np.linalg.norm(offset, axis=1)
        local = boxed & (distance[part.faces].min(axis=1) < reach + margin)
        clamped = nearest + offset * np.minimum(1.0, reach / distance.clip(1e-12))[:, None]
        columns = [clamped, part.vertices, part.normals]
        columns += [part.uv] if part.uv is not None else []
        points, faces = trimesh.remesh.subdivide_to_size(
            np.hstack(columns), part.faces[local], size, max_iter=16
        )
        uv = points[:, 9:11] if part.uv is not None else None
        faces = np.vstack([part.faces[~local], faces])
        part = part.with_geometry(points[:, 3:6], faces, points[:, 6:9], uv)
        if size <= max_edge:
            return part
        size, margin = max(size / 4, max_edge), size


def touches(part: Part, centre: np.ndarray, radius: float) -> bool:
    """Whether the part's bounding box comes within ``radius`` of ``centre``."""
    lo, hi = part.vertices.min(axis=0), part.vertices.max(axis=0)
    return bool(np.linalg.norm(centre - np.clip(centre, lo, hi)) <= radius)
