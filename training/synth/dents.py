"""Dents: a smooth inward push of the surface around one point, on a clean part.

Procedural objects already carry broad dents as shape variation; this defect is a change
*relative to the clean model*: the references of the same object show it undented. The
clean scene is the refined, unpushed model, so the mask holds the dent and not the
(invisible) change in triangulation.
"""

from __future__ import annotations

import numpy as np

from padformer_edge_training.synth.camera import CameraPose
from padformer_edge_training.synth.defects import DefectScene, refine_near, sample_anchor
from padformer_edge_training.synth.model3d import Model3D
from padformer_edge_training.synth.surface import displaced, touches

RADIUS = (0.05, 0.28)  # of the unit sphere: a pea-sized ding to a dent across a panel
DEPTH = (0.15, 0.4)  # depth as a share of the radius: shallow dings to deep dents
SMALLEST_PIXELS = 4  # the radius is at least this many pixels of the render
SMOOTHNESS = 6  # edges near the dent are split to radius / SMOOTHNESS


def dent_profile(distance: np.ndarray, radius: float) -> np.ndarray:
    """1 at the centre, 0 at the rim and beyond, with zero slope at the rim: no crease."""
    r = np.clip(distance / radius, 0.0, 1.0)
    return (1.0 - r**2) ** 2


def make_dent(
    model: Model3D, pose: CameraPose, rng: np.random.Generator, pixel: float = 0.0
) -> DefectScene:
    """Push every vertex within a ball around a surface point inward along that point's
    normal, by a smooth bump profile. Co-located vertices (a box's creased edges) move
    alike, so the surface never tears; a thin wall bends through, as sheet metal does.
    ``pixel`` is the render's pixel size (``camera.pixel_size``), 0 for no floor."""
    anchor = sample_anchor(model, pose, rng)
    radius = max(rng.uniform(*RADIUS), SMALLEST_PIXELS * pixel)
    depth = radius * rng.uniform(*DEPTH)
    clean, dented = [], []
    for part in model.parts:
        if not touches(part, anchor.point, radius):
            clean.append(part)
            dented.append(part)
            continue
        fine = refine_near(part, anchor.point, radius * 1.2, radius / SMOOTHNESS)
        distance = np.linalg.norm(fine.vertices - anchor.point, axis=1)
        offsets = -depth * dent_profile(distance, radius)[:, None] * anchor.normal[None]
        clean.append(fine)
        dented.append(displaced(fine, offsets))
    return DefectScene([model.with_parts(clean)], [model.with_parts(dented)])
