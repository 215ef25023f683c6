"""Off-screen rendering with pybullet's CPU TinyRenderer (DIRECT mode: no display, no GPU).

Every part becomes a visual-only body. Models are created once and then shown or parked
far outside the view frustum, which is much cheaper than rebuilding bodies for each view
and leaves the pixels of the untouched surface bit-identical between renders.

TinyRenderer ignores a shape's own specular colour; only the light's specular coefficient
changes the highlight. A view that shows parts of different glossiness is therefore
rendered once per coefficient and each pixel is taken from the pass of the body it shows.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pybullet

from padformer_edge_training.synth.camera import FOV_DEGREES, CameraPose
from padformer_edge_training.synth.model3d import Model3D, Part

NEAR, FAR = 0.05, 10.0
MAX_FACES_PER_BODY = 40_000  # pybullet refuses visual meshes of more than about 130k vertices
PARKED = (1000.0, 1000.0, 1000.0)


@dataclass(frozen=True)
class Frame:
    """One render: RGB over the background, linear depth, and which pixels show the object."""

    rgb: np.ndarray  # (h, w, 3) uint8
    depth: np.ndarray  # (h, w) float32, distance along the view axis; FAR on background
    covered: np.ndarray  # (h, w) bool


class Renderer:
    """A private pybullet client that renders Model3D objects at a fixed square size."""

    def __init__(self, size: int, background: tuple[int, int, int] = (255, 255, 255)) -> None:
        self.size = size
        self.background = np.asarray(background, dtype=np.uint8)
        self._client = pybullet.connect(pybullet.DIRECT)
        self._textures = tempfile.TemporaryDirectory(prefix="padformer-synth-tex-")
        self._texture_ids: dict[int, tuple[np.ndarray, int]] = {}
        self._bodies: dict[int, tuple[Model3D, list[int]]] = {}
        self._specular: dict[int, float] = {}  # body id -> light specular coefficient
        self._projection = pybullet.computeProjectionMatrixFOV(
            FOV_DEGREES, 1.0, NEAR, FAR, physicsClientId=self._client
        )

    def resize(self, size: int) -> None:
        """Render the next views at ``size`` px square (a framed part's size in camera
        pixels); the field of view is unchanged, so only the resolution moves."""
        self.size = size

    def close(self) -> None:
        if self._client >= 0:
            pybullet.disconnect(self._client)
            self._client = -1
        self._textures.cleanup()

    def __enter__(self) -> Renderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _texture(self, image: np.ndarray) -> int:
        """pybullet texture id of an image, loaded once; the entry keeps the image alive so
        that its ``id`` cannot be reused by another class's texture."""
        key = id(image)
        if key not in self._texture_ids:
            path = Path(self._textures.name) / f"{len(self._texture_ids)}.png"
            cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_RGB2BGR))
            texture = pybullet.loadTexture(str(path), physicsClientId=self._client)
            self._texture_ids[key] = (image, texture)
        return self._texture_ids[key][1]

    def _create(self, model: Model3D) -> list[int]:
        return [self._create_body(chunk) for part in model.parts for chunk in _chunks(part)]

    def _create_body(self, part: Part) -> int:
        kwargs = {"uvs": part.uv.tolist()} if part.uv is not None else {}
        shape = pybullet.createVisualShape(
            pybullet.GEOM_MESH,
            vertices=part.vertices.tolist(),
            indices=part.faces.ravel().tolist(),
            normals=part.normals.tolist(),
            rgbaColor=list(part.color),
            specularColor=[0.15, 0.15, 0.15],
            physicsClientId=self._client,
            **kwargs,
        )
        body = pybullet.createMultiBody(
            baseVisualShapeIndex=shape, basePosition=PARKED, physicsClientId=self._client
        )
        self._specular[body] = part.specular
        if part.texture is not None and part.uv is not None:
            texture = self._texture(part.texture)
            pybullet.changeVisualShape(
                body, -1, textureUniqueId=texture, physicsClientId=self._client
            )
        return body

    def forget(self, model: Model3D) -> None:
        """Delete the bodies of a model that will not be rendered again (a one-off defect)."""
        entry = self._bodies.pop(id(model), None)
        for body in entry[1] if entry else []:
            pybullet.removeBody(body, physicsClientId=self._client)
            self._specular.pop(body, None)

    def clear(self) -> None:
        """Delete every body, e.g. before the next class, so memory stays flat."""
        for model, _ in list(self._bodies.values()):
            self.forget(model)

    def _show_only(self, models: list[Model3D]) -> None:
        wanted = {id(m) for m in models}
        for model in models:
            if id(model) not in self._bodies:
                self._bodies[id(model)] = (model, self._create(model))
        for key, (_, bodies) in self._bodies.items():
            where = (0.0, 0.0, 0.0) if key in wanted else PARKED
            for body in bodies:
                pybullet.resetBasePositionAndOrientation(
                    body, where, (0, 0, 0, 1), physicsClientId=self._client
                )

    def _capture(
        self, pose: CameraPose, specular: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One TinyRenderer pass: (rgb, depth buffer, segmentation) at one light coefficient."""
        _, _, rgba, depth_buffer, segmentation = pybullet.getCameraImage(
            self.size,
            self.size,
            viewMatrix=pose.view_matrix(),
            projectionMatrix=self._projection,
            lightDirection=pose.light_direction.tolist(),
            lightAmbientCoeff=0.55,
            lightDiffuseCoeff=0.5,
            lightSpecularCoeff=specular,
            shadow=0,
            renderer=pybullet.ER_TINY_RENDERER,
            physicsClientId=self._client,
        )
        shape = (self.size, self.size)
        rgb = np.asarray(rgba, dtype=np.uint8).reshape(*shape, 4)[..., :3].copy()
        buffer = np.asarray(depth_buffer, dtype=np.float64).reshape(shape)
        return rgb, buffer, np.asarray(segmentation, dtype=np.int64).reshape(shape)

    def render(self, models: list[Model3D], pose: CameraPose) -> Frame:
        """Render the given models together (all others hidden) from one pose."""
        self._show_only(models)
        bodies = [b for m in models for b in self._bodies[id(m)][1]]
        coefficients = sorted({self._specular[b] for b in bodies})
        rgb, buffer, segmentation = self._capture(pose, coefficients[0])
        for coefficient in coefficients[1:]:
            glossy = [b for b in bodies if self._specular[b] == coefficient]
            shiny, _, _ = self._capture(pose, coefficient)
            chosen = np.isin(segmentation, glossy)
            rgb[chosen] = shiny[chosen]
        covered = segmentation >= 0
        rgb[~covered] = self.background
        depth = (FAR * NEAR / (FAR - (FAR - NEAR) * buffer)).astype(np.float32)
        depth[~covered] = FAR
        return Frame(rgb, depth, covered)


def _chunks(part: Part) -> list[Part]:
    """Split a part too large for one pybullet visual shape into independent pieces."""
    if len(part.faces) <= MAX_FACES_PER_BODY:
        return [part]
    pieces = []
    for start in range(0, len(part.faces), MAX_FACES_PER_BODY):
        used, faces = np.unique(part.faces[start : start + MAX_FACES_PER_BODY], return_inverse=True)
        uv = part.uv[used] if part.uv is not None else None
        pieces.append(
            part.with_geometry(part.vertices[used], faces.reshape(-1, 3), part.normals[used], uv)
        )
    return pieces
