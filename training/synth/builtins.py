"""Built-in object classes, taken from the meshes that ship with pybullet (pybullet_data).

They let every test and demo render data without a download. The names are a stable
interface: later training and evaluation runs refer to them, so never rename one.
Untextured meshes get a fixed colour so that the classes look distinct from each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pybullet_data


@dataclass(frozen=True)
class Builtin:
    """A bundled model: its file inside pybullet_data and an optional colour override."""

    name: str
    relative_path: str
    description: str
    color: tuple[float, float, float, float] | None = None

    @property
    def path(self) -> Path:
        return Path(pybullet_data.getDataPath()) / self.relative_path


BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("duck", "duck.obj", "rubber duck, textured OBJ"),
        Builtin("soccerball", "soccerball.obj", "football with black and white panels, textured"),
        Builtin("teddy", "teddy2_VHACD_CHs.obj", "teddy bear", (0.62, 0.42, 0.24, 1)),
        Builtin("bunny", "bunny.obj", "Stanford bunny", (0.85, 0.80, 0.70, 1)),
        Builtin("mug", "objects/mug.obj", "mug with a handle", (0.25, 0.45, 0.80, 1)),
        Builtin("lego", "lego/lego.obj", "2x2 toy brick", (0.85, 0.15, 0.12, 1)),
        Builtin("r2d2", "r2d2.urdf", "R2D2 robot, a URDF of boxes, cylinders and meshes"),
        Builtin("torus", "torus/torus_textured.obj", "ring", (0.30, 0.70, 0.35, 1)),
    )
}


def builtin_names() -> list[str]:
    """The stable names accepted as ``builtin:NAME``, in catalogue order."""
    return list(BUILTINS)
