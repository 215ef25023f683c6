"""Camera poses over the whole view sphere, in the NeRF/Blender (OpenGL) convention.

A pose is a camera-to-world matrix whose columns are the camera's right, up and back
axes and its position: the camera looks down its own -z axis. That is the matrix
``transforms.json`` stores, and its inverse is the view matrix pybullet wants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

FOV_DEGREES = 40.0


@dataclass(frozen=True)
class CameraPose:
    """Where the camera is, how it is rolled, and where the light comes from."""

    camera_to_world: np.ndarray  # (4, 4)
    light_direction: np.ndarray  # (3,) unit vector from the object towards the light

    @property
    def position(self) -> np.ndarray:
        return self.camera_to_world[:3, 3]

    def view_matrix(self) -> list[float]:
        """World-to-camera matrix flattened column-major, as pybullet expects."""
        return np.linalg.inv(self.camera_to_world).T.ravel().tolist()


def _unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v)


def look_at(direction: np.ndarray, distance: float, roll: float) -> np.ndarray:
    """Camera-to-world matrix for a camera at ``direction * distance`` facing the origin."""
    back = _unit(direction)
    helper = np.array([0.0, 0.0, 1.0]) if abs(back[2]) < 0.95 else np.array([1.0, 0.0, 0.0])
    right = _unit(np.cross(helper, back))
    up = np.cross(back, right)
    c, s = math.cos(roll), math.sin(roll)
    right, up = c * right + s * up, -s * right + c * up
    matrix = np.eye(4)
    matrix[:3, 0], matrix[:3, 1], matrix[:3, 2], matrix[:3, 3] = right, up, back, back * distance
    return matrix


def pixel_size(pose: CameraPose, size: int) -> float:
    """Width of one pixel at the object's centre, in unit-sphere units, for a ``size`` px view.

    The newer defect kinds floor their smallest draws at a few pixels with it, so that a
    small render still shows its thin cracks and crumbs instead of re-drawing forever.
    """
    half_width = float(np.linalg.norm(pose.position)) * math.tan(math.radians(FOV_DEGREES) / 2)
    return 2.0 * half_width / size


def sample_pose(rng: np.random.Generator) -> CameraPose:
    """A uniformly random direction on the sphere, random roll, jittered distance and light.

    The base distance fits the unit bounding sphere in the field of view; the jitter only
    moves the camera back so the object is never cropped. The light stays on the camera's
    side (it is a product photo, not a silhouette) but wanders by up to about 40 degrees.
    """
    direction = _unit(rng.normal(size=3))
    roll = rng.uniform(0.0, 2.0 * math.pi)
    distance = rng.uniform(1.0, 1.2) / math.sin(math.radians(FOV_DEGREES) / 2.0)
    matrix = look_at(direction, distance, roll)
    light = _unit(direction + 0.5 * matrix[:3, 1] + 0.35 * rng.normal(size=3))
    return CameraPose(matrix, light)
