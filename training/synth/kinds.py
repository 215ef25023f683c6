"""Every defect kind ``synth`` can render, in rendering order, and how ``--defects`` names them.

The first three (MAD-Sim's Burrs, Missing and Stains) are the default and share the
class's random stream in this order, exactly as before the newer kinds existed, so a
render without ``--defects`` keeps its bytes. Each newer kind draws from a stream of its
own, so adding or dropping one never changes another kind's images.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from padformer_edge.errors import UserError
from padformer_edge_training.families import FAMILIES, HELD_OUT_FAMILY
from padformer_edge_training.synth.bent import make_bent
from padformer_edge_training.synth.camera import CameraPose, pixel_size
from padformer_edge_training.synth.cracks import make_crack
from padformer_edge_training.synth.defects import DEFECT_KINDS, GENERATORS, DefectScene
from padformer_edge_training.synth.dents import make_dent
from padformer_edge_training.synth.discolour import make_discoloured
from padformer_edge_training.synth.foreign import make_foreign
from padformer_edge_training.synth.model3d import Model3D

Generator = Callable[[Model3D, CameraPose, np.random.Generator], DefectScene]
SizedGenerator = Callable[[Model3D, CameraPose, np.random.Generator, float], DefectScene]

NEWER_GENERATORS: dict[str, SizedGenerator] = {
    "Dents": make_dent,
    "Discoloured": make_discoloured,
    "Foreign": make_foreign,
    "Cracks": make_crack,
    "Bent": make_bent,  # last: older renders keep their files (frame order too) byte for byte
}
ALL_KINDS = (*GENERATORS, *NEWER_GENERATORS)
KIND_WORDS = {"default": DEFECT_KINDS, **FAMILIES, "held-out": HELD_OUT_FAMILY, "all": ALL_KINDS}


def make_scene(
    kind: str, model: Model3D, pose: CameraPose, rng: np.random.Generator, size: int
) -> DefectScene:
    """One draw of ``kind`` for a ``size`` px view of ``pose``.

    The newer kinds are told the pixel size so their smallest draws stay visible; the
    default three are called exactly as before, so their random draws are unchanged.
    """
    if kind in NEWER_GENERATORS:
        return NEWER_GENERATORS[kind](model, pose, rng, pixel_size(pose, size))
    return GENERATORS[kind](model, pose, rng)


def resolve_kinds(names: Iterable[str]) -> tuple[str, ...]:
    """Kind names and family words (any case, comma-separated or repeated) as kinds in
    rendering order, each once; nothing given means the default three."""
    wanted: set[str] = set()
    by_lower = {kind.lower(): (kind,) for kind in ALL_KINDS}
    by_lower |= {word: kinds for word, kinds in KIND_WORDS.items()}
    for text in names:
        for name in (n.strip() for n in text.split(",")):
            if not name:
                continue
            if name.lower() not in by_lower:
                raise UserError(
                    f"unknown defect kind '{name}' in --defects; choose from "
                    f"{', '.join(ALL_KINDS)} or a family word ({', '.join(KIND_WORDS)})."
                )
            wanted.update(by_lower[name.lower()])
    return tuple(k for k in ALL_KINDS if k in wanted) if wanted else DEFECT_KINDS
