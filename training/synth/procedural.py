"""Random objects for training a generic model: primitives combined, deformed and painted.

A generic PADFormer must learn to reconstruct *any* part from other views of it, so its
training set needs many shapes and surfaces, not eight built-in meshes. Each object here
is a main body (box, cylinder, capsule, ellipsoid, cone, ring or tube) with zero to three
smaller primitives attached, the whole bent, twisted, tapered or dented, and each part
painted matte or glossy with a flat colour or a procedural texture (stripes, noise,
checks, dots or a printed label with text and a barcode).

An object is named by ``procedural:SEED:INDEX`` and built from its own random stream
(seed and index), so the same spec always gives the same geometry and texture bytes, and
object 7 does not change when more objects are asked for.
"""

from __future__ import annotations

import colorsys
import hashlib
import math
import re
import string
from collections.abc import Callable

import cv2
import numpy as np
import trimesh

from padformer_edge.errors import UserError
from padformer_edge_training.synth.model3d import MATTE, Model3D, Part, normalised

PREFIX = "procedural:"
TEXTURE_SIZE = 128
MAX_EDGE = 0.12  # subdivision before deforming: fine enough for a smooth bend
MAX_OBJECTS = 100_000
GENERATOR_VERSION = 1  # bump when a change alters the objects a spec produces

Colour = tuple[float, float, float]


def procedural_specs(count: int, seed: int) -> list[str]:
    """The specs of ``count`` procedural objects for one seed, in order."""
    if not 1 <= count <= MAX_OBJECTS:
        raise UserError(
            f"--procedural {count} is out of range; ask for 1 to {MAX_OBJECTS} objects."
        )
    return [f"{PREFIX}{seed}:{index}" for index in range(count)]


def is_procedural(spec: str) -> bool:
    return spec.startswith(PREFIX)


def parse_spec(spec: str) -> tuple[int, int]:
    """``procedural:SEED:INDEX`` into (seed, index); anything else is a UserError."""
    match = re.fullmatch(r"procedural:(-?\d+):(\d+)", spec)
    if match is None:
        raise UserError(
            f"'{spec}' is not a procedural object; write procedural:SEED:INDEX, e.g. "
            "procedural:0:3, or use --procedural N."
        )
    return int(match.group(1)), int(match.group(2))


def class_name(seed: int, index: int) -> str:
    """Class folder name: unique across seeds, so datasets of two seeds can be merged."""
    return f"procedural-{seed}-{index:03d}"


def model_digest(model: Model3D) -> str:
    """sha256 over every array and material of the object, recorded in dataset.json."""
    digest = hashlib.sha256(f"procedural v{GENERATOR_VERSION}".encode())
    for part in model.parts:
        for array in (part.vertices, part.faces, part.normals, part.uv, part.texture):
            if array is not None:
                digest.update(np.ascontiguousarray(array).tobytes())
        digest.update(repr((part.color, part.specular)).encode())
    return digest.hexdigest()


# ---------------------------------------------------------------- colours and textures


def _colour(rng: np.random.Generator) -> Colour:
    """Any hue; from near-black to near-white, from grey to fully saturated."""
    r, g, b = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(0.0, 0.9), rng.uniform(0.2, 0.95))
    return (r, g, b)


def _to_bytes(colour: Colour) -> np.ndarray:
    return np.round(np.asarray(colour) * 255).astype(np.uint8)


def _contrasting(colour: Colour, rng: np.random.Generator) -> Colour:
    """A second colour that stays visible on ``colour`` (another hue or lightness)."""
    h, s, v = colorsys.rgb_to_hsv(*colour)
    h = (h + rng.uniform(0.25, 0.75)) % 1.0
    v = v - 0.45 if v > 0.55 else v + 0.4
    return colorsys.hsv_to_rgb(h, max(s, rng.uniform(0.3, 0.9)), float(np.clip(v, 0.05, 1.0)))


def _stripes(base: Colour, rng: np.random.Generator) -> np.ndarray:
    n = TEXTURE_SIZE
    y, x = np.mgrid[0:n, 0:n].astype(np.float64)
    angle = rng.choice([0.0, math.pi / 2, rng.uniform(0, math.pi)])
    along = x * math.cos(angle) + y * math.sin(angle)
    period = rng.uniform(8, 40)
    colours = [_to_bytes(base), _to_bytes(_contrasting(base, rng))]
    if rng.uniform() < 0.4:
        colours.append(_to_bytes(_colour(rng)))
    band = (along / period).astype(np.int64) % len(colours)
    return np.stack(colours)[band]


def _smooth_noise(rng: np.random.Generator, cells: int, stretch: float = 1.0) -> np.ndarray:
    """Values in [0, 1]: a coarse random grid upsampled with cubic interpolation."""
    grid = rng.uniform(size=(cells, max(2, int(cells * stretch)))).astype(np.float32)
    big = cv2.resize(grid, (TEXTURE_SIZE, TEXTURE_SIZE), interpolation=cv2.INTER_CUBIC)
    return np.clip(big, 0.0, 1.0).astype(np.float64)


def _noise(base: Colour, rng: np.random.Generator) -> np.ndarray:
    """Mottled paint, or brushed metal when the noise is stretched along one axis."""
    stretch = rng.choice([1.0, 8.0])
    cells = int(rng.integers(4, 24))
    noise = 0.6 * _smooth_noise(rng, cells, stretch) + 0.4 * _smooth_noise(rng, 2 * cells)
    strength = rng.uniform(0.2, 0.6)
    shade = 1.0 + strength * (noise - 0.5)
    return np.clip(_to_bytes(base)[None, None] * shade[..., None], 0, 255).astype(np.uint8)


def _checks(base: Colour, rng: np.random.Generator) -> np.ndarray:
    n = TEXTURE_SIZE
    y, x = np.mgrid[0:n, 0:n]
    cell = int(rng.integers(10, 40))
    odd = ((x // cell + y // cell) % 2).astype(bool)
    image = np.empty((n, n, 3), np.uint8)
    image[...] = _to_bytes(base)
    image[odd] = _to_bytes(_contrasting(base, rng))
    return image


def _dots(base: Colour, rng: np.random.Generator) -> np.ndarray:
    image = np.empty((TEXTURE_SIZE, TEXTURE_SIZE, 3), np.uint8)
    image[...] = _to_bytes(base)
    dot = tuple(int(c) for c in _to_bytes(_contrasting(base, rng)))
    step = int(rng.integers(14, 36))
    radius = max(2, int(step * rng.uniform(0.15, 0.4)))
    for row, y in enumerate(range(step // 2, TEXTURE_SIZE, step)):
        shift = step // 2 if row % 2 else 0
        for x in range(step // 2 + shift, TEXTURE_SIZE, step):
            cv2.circle(image, (x, y), radius, dot, -1, lineType=cv2.LINE_AA)
    return image


def _label(base: Colour, rng: np.random.Generator) -> np.ndarray:
    """A printed label: a pale rectangle with a border, lines of text and a barcode."""
    n = TEXTURE_SIZE
    image = np.empty((n, n, 3), np.uint8)
    image[...] = _to_bytes(base)
    x0, y0 = (int(v) for v in rng.integers(4, n // 4, size=2))
    x1, y1 = (int(v) for v in n - rng.integers(4, n // 4, size=2))
    paper = tuple(int(c) for c in rng.integers(215, 256, size=3))
    ink = tuple(int(c) for c in _to_bytes(_colour(rng)) // 3)
    cv2.rectangle(image, (x0, y0), (x1, y1), paper, -1)
    cv2.rectangle(image, (x0, y0), (x1, y1), ink, 1)
    alphabet = np.array(list(string.ascii_uppercase + string.digits))
    y = y0 + 14
    while y < y1 - 20:
        text = "".join(rng.choice(alphabet, size=int(rng.integers(3, 9))))
        scale = rng.uniform(0.3, 0.45)
        cv2.putText(image, text, (x0 + 4, y), cv2.FONT_HERSHEY_SIMPLEX, scale, ink, 1)
        y += int(rng.integers(12, 18))
    x = x0 + 4
    while x < x1 - 4:
        width = int(rng.integers(1, 4))
        if rng.uniform() < 0.6:
            cv2.rectangle(image, (x, y1 - 16), (x + width - 1, y1 - 4), (0, 0, 0), -1)
        x += width
    return image


TEXTURES: dict[str, Callable[[Colour, np.random.Generator], np.ndarray] | None] = {
    "plain": None,
    "stripes": _stripes,
    "noise": _noise,
    "checks": _checks,
    "dots": _dots,
    "label": _label,
}


# ---------------------------------------------------------------- geometry


def _primitive(kind: str, rng: np.random.Generator) -> trimesh.Trimesh:
    """One primitive of roughly unit size in its own frame, its main axis along z."""
    u = rng.uniform
    if kind == "box":
        return trimesh.creation.box(extents=[u(0.4, 1.0), u(0.4, 1.0), u(0.4, 1.0)])
    if kind == "cylinder":
        return trimesh.creation.cylinder(u(0.2, 0.5), u(0.4, 1.2), sections=32)
    if kind == "capsule":
        return trimesh.creation.capsule(u(0.3, 0.9), u(0.15, 0.4), count=[24, 24])
    if kind == "ellipsoid":
        sphere = trimesh.creation.icosphere(3, radius=0.5)
        sphere.apply_scale([u(0.5, 1.0), u(0.5, 1.0), u(0.6, 1.2)])
        return sphere
    if kind == "cone":
        return trimesh.creation.cone(u(0.25, 0.5), u(0.4, 1.0), sections=32)
    if kind == "ring":
        major = u(0.3, 0.45)
        return trimesh.creation.torus(major, major * u(0.3, 0.5), 32, 16)
    outer = u(0.3, 0.5)
    return trimesh.creation.annulus(outer * u(0.5, 0.75), outer, u(0.2, 0.8), sections=32)


BODIES = ("box", "cylinder", "capsule", "ellipsoid", "cone", "ring", "tube")
ATTACHMENTS = ("box", "cylinder", "capsule", "ellipsoid", "cone", "ring")


def _planar_uv(vertices: np.ndarray) -> np.ndarray:
    """Project the texture along the part's thinnest axis, keeping its aspect square.

    A projection has no seam, so a texture never shows a squeezed copy of itself along a
    wrap-around edge; faces parallel to the projection see the pattern stretched, as a
    print on a curved part does.
    """
    extent = vertices.max(axis=0) - vertices.min(axis=0)
    a, b = (axis for axis in range(3) if axis != int(np.argmin(extent)))
    span = max(extent[a], extent[b], 1e-9)
    lo = vertices.min(axis=0)
    return np.stack([(vertices[:, a] - lo[a]) / span, (vertices[:, b] - lo[b]) / span], axis=1)


def _random_rotation(rng: np.random.Generator) -> np.ndarray:
    quaternion = rng.normal(size=4)
    quaternion /= np.linalg.norm(quaternion)
    return trimesh.transformations.quaternion_matrix(quaternion)


def _deform(points: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Zero to two whole-object deformations: taper, twist, bend and dents.

    Each is a smooth function of position, so vertices that were split for sharp-edge
    shading move together and no crack opens.
    """
    x, y, z = points.T.copy()
    for kind in rng.choice(["taper", "twist", "bend", "dent"], size=int(rng.integers(0, 3))):
        if kind == "taper":
            factor = np.clip(1.0 + rng.uniform(-0.6, 0.6) * z, 0.3, 2.0)
            x, y = x * factor, y * factor
        elif kind == "twist":
            angle = rng.uniform(-1.5, 1.5) * z
            x, y = x * np.cos(angle) - y * np.sin(angle), x * np.sin(angle) + y * np.cos(angle)
        elif kind == "bend":
            z = z + rng.uniform(-0.6, 0.6) * x**2
        else:
            waves = rng.normal(size=(3, 3)) * 4.0
            phases = rng.uniform(0, 2 * math.pi, size=3)
            offset = np.sin(np.stack([x, y, z], axis=1) @ waves.T + phases).sum(axis=1)
            scale = 1.0 + 0.03 * offset
            x, y, z = x * scale, y * scale, z * scale
    return np.stack([x, y, z], axis=1)


def _material(rng: np.random.Generator) -> tuple[Colour, np.ndarray | None, float]:
    """(flat colour, texture or None, specular): matte or glossy, plain or patterned."""
    base = _colour(rng)
    kind = str(rng.choice(list(TEXTURES), p=[0.3, 0.16, 0.16, 0.1, 0.1, 0.18]))
    painter = TEXTURES[kind]
    texture = painter(base, rng) if painter is not None else None
    specular = MATTE if rng.uniform() < 0.55 else float(rng.uniform(0.6, 1.6))
    return base, texture, specular


def _placed_primitives(rng: np.random.Generator) -> list[trimesh.Trimesh]:
    """The main body plus attachments rooted on its surface and pointing outwards."""
    body = _primitive(str(rng.choice(BODIES)), rng)
    meshes = [body]
    for _ in range(int(rng.choice([0, 1, 1, 2, 3]))):
        extra = _primitive(str(rng.choice(ATTACHMENTS)), rng)
        extra.apply_scale(rng.uniform(0.35, 0.7))
        vertex = int(rng.integers(len(body.vertices)))
        normal = body.vertex_normals[vertex]
        align = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], normal)
        # its bottom sinks into the body by 20-50 % of its height, so nothing floats
        sink = rng.uniform(0.2, 0.5) * (extra.bounds[1, 2] - extra.bounds[0, 2])
        lift = -extra.bounds[0, 2] - sink
        align[:3, 3] = body.vertices[vertex] + normal * lift
        extra.apply_transform(align)
        meshes.append(extra)
    return meshes


def build_object(seed: int, index: int) -> Model3D:
    """Procedural object ``index`` of ``seed``, centred and scaled into the unit sphere."""
    rng = np.random.default_rng([seed & 0xFFFFFFFF, index, 0x9E3779B9])
    rotation = _random_rotation(rng)[:3, :3]  # one rotation of the object, before deforming
    shared = _material(rng)
    parts = []
    for number, mesh in enumerate(_placed_primitives(rng)):
        material = shared if number == 0 or rng.uniform() < 0.5 else _material(rng)
        colour, texture, specular = material
        mesh = mesh.smooth_shaded  # split vertices along sharp edges: crisp box corners
        vertices = np.asarray(mesh.vertices, dtype=np.float64)
        uv = _planar_uv(vertices)
        fine, faces = trimesh.remesh.subdivide_to_size(
            np.hstack([vertices, uv]), np.asarray(mesh.faces), MAX_EDGE, max_iter=8
        )
        parts.append((fine[:, :3], faces, fine[:, 3:5], colour, texture, specular))
    everything = np.concatenate([p[0] for p in parts]) @ rotation.T
    moved = _deform(everything, rng)
    result, start = [], 0
    for points, faces, uv, colour, texture, specular in parts:
        vertices = moved[start : start + len(points)]
        start += len(points)
        normals = trimesh.Trimesh(vertices, faces, process=False).vertex_normals
        rgba = (1.0, 1.0, 1.0, 1.0) if texture is not None else (*colour, 1.0)
        result.append(
            Part(
                vertices=np.asarray(vertices, dtype=np.float64),
                faces=np.asarray(faces, dtype=np.int64),
                normals=np.asarray(normals, dtype=np.float64),
                uv=uv if texture is not None else None,
                texture=texture,
                color=rgba,
                specular=specular,
            )
        )
    return normalised(class_name(seed, index), result)


def load_procedural(spec: str) -> Model3D:
    """The Model3D of a ``procedural:SEED:INDEX`` spec."""
    seed, index = parse_spec(spec)
    return build_object(seed, index)
