"""Discoloured regions: a patch of the surface faded or tinted, keeping its texture.

Unlike a stain (an opaque decal of a foreign colour on top of the surface), the patch is
the surface itself in another hue or brightness: the same faces, not lifted, so depth
is unchanged and the mask holds only pixels whose colour moved. The patch fades out in
bands towards an irregular rim, as sun-bleaching or heat tint does.
"""

from __future__ import annotations

import colorsys
import math

import numpy as np

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.defects import DefectScene, refine_near, sample_anchor
from padformer_edge_training.synth.model3d import Model3D, Part
from padformer_edge_training.synth.surface import faces_subset, recoloured, touches, unit

RADIUS = (0.06, 0.3)  # of the unit sphere
SMALLEST_PIXELS = 4  # the radius is at least this many pixels of the render
BANDS = 3  # strength steps from the rim (1/3) to the middle (full)
FACING = 0.2  # faces turned further from the patch's normal stay untouched


def _tint(rng: np.random.Generator) -> np.ndarray:
    """A multiplier in [0, 1] per channel: a hue cast with some darkening.

    The renderer multiplies a texture by the part colour and wraps values above 1, so a
    textured surface can only be tinted or darkened this way, never lightened.
    """
    hue, saturation, value = rng.uniform(), rng.uniform(0.25, 0.7), rng.uniform(0.5, 0.85)
    return np.asarray(colorsys.hsv_to_rgb(hue, saturation, value))


def _changed_colour(
    base: np.ndarray, tint: np.ndarray, fade: float, textured: bool, strength: float
) -> np.ndarray:
    """The band colour at ``strength`` (0 none, 1 full): a flat part fades towards a pale
    grey when ``fade`` > 0; a textured part, or any part when ``fade`` is 0, is tinted."""
    if fade > 0.0 and not textured:
        pale = 0.45 + 0.55 * base.mean() * np.ones(3)
        return base + strength * fade * (pale - base)
    return base * (1.0 - strength * (1.0 - tint))


def make_discoloured(
    model: Model3D, pose: CameraPose, rng: np.random.Generator, pixel: float = 0.0
) -> DefectScene:
    """Recolour the faces around a surface point within an irregular outline, in bands.
    ``pixel`` is the render's pixel size (``camera.pixel_size``), 0 for no floor."""
    anchor = sample_anchor(model, pose, rng)
    radius = max(rng.uniform(*RADIUS), SMALLEST_PIXELS * pixel)
    harmonics = [(k, rng.uniform(0.05, 0.2), rng.uniform(0, 2 * math.pi)) for k in (2, 3, 4)]
    tangent = unit(np.cross(anchor.normal, rng.normal(size=3)))
    bitangent = np.cross(anchor.normal, tangent)
    tint = _tint(rng)
    fade = rng.uniform(0.5, 1.0) if rng.uniform() < 0.5 else 0.0
    clean: list[Part] = []
    changed: list[Part] = []
    for part in model.parts:
        if not touches(part, anchor.point, radius * 1.3):
            clean.append(part)
            changed.append(part)
            continue
        fine = refine_near(part, anchor.point, radius * 1.4, radius / 5)
        centres = fine.vertices[fine.faces].mean(axis=1)
        offset = centres - anchor.point
        angle = np.arctan2(offset @ bitangent, offset @ tangent)
        reach = radius * (1 + sum(a * np.sin(k * angle + phase) for k, a, phase in harmonics))
        facing = fine.normals[fine.faces].mean(axis=1) @ anchor.normal > FACING
        inside = 1.0 - np.linalg.norm(offset, axis=1) / reach
        band = np.where(facing & (inside > 0), np.ceil(inside * BANDS), 0).astype(int)
        clean.append(fine)
        changed.append(faces_subset(fine, band == 0))
        base = np.asarray(part.color[:3])
        textured = part.texture is not None and part.uv is not None
        for level in range(1, BANDS + 1):
            if (band == level).any():
                colour = _changed_colour(base, tint, fade, textured, level / BANDS)
                changed.append(recoloured(faces_subset(fine, band == level), colour))
    return DefectScene([model.with_parts(clean)], [model.with_parts(changed)])
