"""Foreign bodies: a small separate object lying on or stuck to the part.

A pebble, a pin, a flake or a washer in a material of its own (rubber, metal, plastic,
dirt), laid flat on the surface with its thinnest side along the normal and sunk a
little into it, so that it touches the part from every view. Unlike a burr it is not in
the part's colour and does not grow out of the surface.
"""

from __future__ import annotations

import colorsys

import numpy as np
import trimesh

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.defects import DefectScene, sample_anchor
from padformer_edge_training.synth.model3d import MATTE, Model3D, Part

SIZE = (0.05, 0.3)  # longest extent, of the unit sphere: a crumb to a dropped washer
SMALLEST_PIXELS = 5  # the longest extent is at least this many pixels of the render
SHAPES = ("pebble", "pin", "flake", "washer")
GLOSSY = 1.0  # the light's specular coefficient for metal


def _shape(kind: str, size: float, rng: np.random.Generator) -> trimesh.Trimesh:
    """The object centred at the origin, longest along x and thinnest along z."""
    if kind == "pebble":
        mesh = trimesh.creation.icosphere(2, radius=0.5)
        bumps = 1.0 + 0.08 * rng.normal(size=len(mesh.vertices))
        mesh.vertices = mesh.vertices * bumps[:, None]
        mesh.apply_scale([size, size * rng.uniform(0.6, 1.0), size * rng.uniform(0.35, 0.7)])
    elif kind == "pin":
        mesh = trimesh.creation.cylinder(size * rng.uniform(0.05, 0.12), size, sections=12)
        mesh.apply_transform(trimesh.transformations.rotation_matrix(np.pi / 2, [0, 1, 0]))
    elif kind == "flake":
        mesh = trimesh.creation.box(
            [size, size * rng.uniform(0.4, 0.9), size * rng.uniform(0.05, 0.15)]
        )
    else:
        mesh = trimesh.creation.torus(
            size * 0.38, size * rng.uniform(0.06, 0.12), major_sections=24, minor_sections=8
        )
    return mesh


def _material(rng: np.random.Generator) -> tuple[tuple[float, float, float, float], float]:
    """(colour, specular) of black rubber, bare metal, coloured plastic or brown dirt."""
    choice = int(rng.integers(4))
    if choice == 0:
        grey = rng.uniform(0.06, 0.16)
        return (grey, grey, grey, 1.0), MATTE
    if choice == 1:
        grey = rng.uniform(0.5, 0.8)
        return (grey, grey, grey * rng.uniform(0.9, 1.05), 1.0), GLOSSY
    if choice == 2:
        rgb = colorsys.hsv_to_rgb(rng.uniform(), rng.uniform(0.6, 1.0), rng.uniform(0.5, 0.95))
        return (*rgb, 1.0), 0.5
    rgb = colorsys.hsv_to_rgb(rng.uniform(0.05, 0.11), rng.uniform(0.4, 0.8), rng.uniform(0.2, 0.5))
    return (*rgb, 1.0), MATTE


def make_foreign(
    model: Model3D, pose: CameraPose, rng: np.random.Generator, pixel: float = 0.0
) -> DefectScene:
    """One small object of its own shape and material, resting on a surface point.
    ``pixel`` is the render's pixel size (``camera.pixel_size``), 0 for no floor."""
    anchor = sample_anchor(model, pose, rng)
    kind = SHAPES[int(rng.integers(len(SHAPES)))]
    mesh = _shape(kind, max(rng.uniform(*SIZE), SMALLEST_PIXELS * pixel), rng)
    thickness = float(np.ptp(mesh.vertices[:, 2]))
    spin = trimesh.transformations.rotation_matrix(rng.uniform(0, 2 * np.pi), [0, 0, 1])
    tilt = trimesh.geometry.align_vectors([0.0, 0.0, 1.0], anchor.normal)
    mesh.apply_transform(tilt @ spin)
    sunk = thickness * (0.5 - rng.uniform(0.1, 0.4))  # its middle sits just above the surface
    mesh.apply_translation(anchor.point + sunk * anchor.normal)
    colour, specular = _material(rng)
    body = Part(
        np.asarray(mesh.vertices, dtype=np.float64),
        np.asarray(mesh.faces, dtype=np.int64),
        np.asarray(mesh.vertex_normals, dtype=np.float64),
        color=colour,
        specular=specular,
    )
    return DefectScene([model], [model, model.with_parts([body])])
