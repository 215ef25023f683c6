"""The renderable object: a list of triangle parts, each with a texture or a flat colour.

Every mesh format ends up as this one structure so that the defect generators and the
renderer never care where a model came from. Normals and UVs are carried per vertex and
interpolated, never recomputed, when a defect refines the surface: a refined but
otherwise untouched surface must shade exactly like the original.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import trimesh

DEFAULT_COLOR = (0.72, 0.72, 0.74, 1.0)
MATTE = 0.1  # the light's specular coefficient for an ordinary, dull surface


@dataclass(frozen=True, eq=False)
class Part:
    """One triangle mesh with per-vertex normals, optional UVs + texture, and a colour."""

    vertices: np.ndarray  # (n, 3) float64
    faces: np.ndarray  # (m, 3) int64
    normals: np.ndarray  # (n, 3) float64, unit length
    uv: np.ndarray | None = None  # (n, 2) float64, OpenGL convention (v up)
    texture: np.ndarray | None = None  # (h, w, 3) uint8 RGB, shared between copies
    color: tuple[float, float, float, float] = DEFAULT_COLOR
    specular: float = MATTE  # highlight strength: MATTE for dull, about 1 for glossy plastic

    @property
    def area(self) -> float:
        return float(trimesh.triangles.area(self.vertices[self.faces]).sum())

    def with_geometry(
        self, vertices: np.ndarray, faces: np.ndarray, normals: np.ndarray, uv: np.ndarray | None
    ) -> Part:
        """A copy with new geometry that keeps this part's texture and colour."""
        return replace(self, vertices=vertices, faces=faces, normals=normals, uv=uv)

    def with_specular(self, specular: float) -> Part:
        """A copy with another highlight strength (same geometry, texture and colour)."""
        return replace(self, specular=specular)

    def color_at_vertex(self, index: int) -> np.ndarray:
        """RGB in [0, 1] of the surface at a vertex: texture lookup or the flat colour."""
        rgb = np.asarray(self.color[:3], dtype=np.float64)
        if self.texture is None or self.uv is None:
            return rgb
        h, w = self.texture.shape[:2]
        u, v = self.uv[index] % 1.0
        pixel = self.texture[min(int((1.0 - v) * h), h - 1), min(int(u * w), w - 1)]
        return rgb * pixel.astype(np.float64) / 255.0


@dataclass(frozen=True, eq=False)
class Model3D:
    """A whole object: its parts, already centred and scaled into the unit sphere."""

    name: str
    parts: tuple[Part, ...] = field(default_factory=tuple)

    @property
    def face_count(self) -> int:
        return sum(len(p.faces) for p in self.parts)

    def with_parts(self, parts: list[Part] | tuple[Part, ...]) -> Model3D:
        return Model3D(self.name, tuple(p for p in parts if len(p.faces)))


def part_from_trimesh(
    mesh: trimesh.Trimesh, color: tuple[float, float, float, float] | None = None
) -> Part:
    """Convert one trimesh mesh, reading its texture or colour from its visual."""
    uv, texture, rgba = None, None, DEFAULT_COLOR
    visual = mesh.visual
    if isinstance(visual, trimesh.visual.TextureVisuals):
        material = visual.material
        if isinstance(material, trimesh.visual.material.PBRMaterial):
            material = material.to_simple()
        image = getattr(material, "image", None)
        if image is not None and visual.uv is not None and len(visual.uv) == len(mesh.vertices):
            texture = np.asarray(image.convert("RGB"), dtype=np.uint8)
            uv = np.asarray(visual.uv, dtype=np.float64)
            rgba = (1.0, 1.0, 1.0, 1.0)
        elif getattr(material, "diffuse", None) is not None:
            rgba = tuple(float(c) / 255.0 for c in material.diffuse)  # type: ignore[assignment]
    elif isinstance(visual, trimesh.visual.ColorVisuals) and visual.defined:
        rgba = tuple(float(c) / 255.0 for c in visual.main_color)  # type: ignore[assignment]
    if color is not None:
        rgba, texture, uv = color, None, None
    rgba = (*rgba[:3], 1.0)  # the renderer draws opaque parts only
    return Part(
        vertices=np.asarray(mesh.vertices, dtype=np.float64),
        faces=np.asarray(mesh.faces, dtype=np.int64),
        normals=np.asarray(mesh.vertex_normals, dtype=np.float64),
        uv=uv,
        texture=texture,
        color=rgba,  # type: ignore[arg-type]
    )


def normalised(name: str, parts: list[Part]) -> Model3D:
    """Centre the parts on their bounding-box centre and scale them into the unit sphere.

    Camera distances, defect sizes and offsets are then fractions of one unit whatever
    units the CAD export used (metres, millimetres, inches).
    """
    points = np.concatenate([p.vertices for p in parts])
    lo, hi = points.min(axis=0), points.max(axis=0)
    centre = (lo + hi) / 2.0
    radius = float(np.linalg.norm(points - centre, axis=1).max())
    scale = 1.0 / radius if radius > 0 else 1.0
    moved = [
        p.with_geometry((p.vertices - centre) * scale, p.faces, p.normals, p.uv) for p in parts
    ]
    return Model3D(name, tuple(moved))
