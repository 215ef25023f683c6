"""Render a MAD-Sim-layout dataset: good training views, good and defective test views,
pixel-exact masks, NeRF-style camera poses and a manifest saying how it was made.

Everything is rendered into a hidden temporary folder beside the output and moved into
place at the end, so an interrupted or failed run never leaves half a dataset behind.
Each class draws from its own random stream (seed + class name), so the bytes of one
class do not depend on which other classes were rendered with it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge_training.synth.camera import FOV_DEGREES, CameraPose, sample_pose
from padformer_edge_training.synth.defects import DEFECT_KINDS
from padformer_edge_training.synth.frame_scratches import SCRATCH_KIND, draw_scratch
from padformer_edge_training.synth.frames import (
    THIN_JPEG_QUALITY,
    Framer,
    FrameSpec,
    Placement,
    box_of,
    frame_stream,
)
from padformer_edge_training.synth.kinds import NEWER_GENERATORS, make_scene, resolve_kinds
from padformer_edge_training.synth.loaders import load_model, spec_identity
from padformer_edge_training.synth.model3d import Model3D
from padformer_edge_training.synth.renderer import Frame, Renderer

FORMAT_VERSION = 1
COLOUR_TOLERANCE = 4  # 8-bit levels; below this a change is invisible and not a defect
DEPTH_TOLERANCE = 1e-3  # unit-sphere units; a quarter of the stain decal's lift
MAX_DRAWS = 40
THIN_KINDS = ("Cracks",)  # their thinnest draws are about a pixel of the render


@dataclass(frozen=True)
class ViewCounts:
    """How many images each class gets."""

    train: int = 200
    test_per_defect: int = 30
    test_good: int = 30

    @property
    def per_class(self) -> int:
        """Images per class with the default defect kinds."""
        return self.per_class_with(DEFECT_KINDS)

    def per_class_with(self, kinds: Sequence[str]) -> int:
        """Images per class when rendering ``kinds``."""
        return self.train + self.test_good + self.test_per_defect * len(kinds)


def defect_mask(clean: Frame, defective: Frame) -> np.ndarray:
    """Pixels where the defective render differs from the clean one: colour, depth or cover."""
    colour = np.abs(clean.rgb.astype(np.int16) - defective.rgb).max(axis=2) > COLOUR_TOLERANCE
    depth = np.abs(clean.depth - defective.depth) > DEPTH_TOLERANCE
    return colour | depth | (clean.covered != defective.covered)


def min_mask_pixels(size: int) -> int:
    """A defect must cover 0.1 % of the image (at least 12 pixels) to count as visible."""
    return max(12, math.ceil(0.001 * size * size))


def render_defect_view(
    renderer: Renderer, model: Model3D, kind: str, pose: CameraPose, rng: np.random.Generator
) -> tuple[Frame, Frame, np.ndarray]:
    """One draw of a defect for one pose: (clean frame, defective frame, mask).

    The defective image takes the defect's pixels from the defective render and all
    others from the plain model's render, so outside the mask a test image is exactly
    what a good view of that pose looks like (a refined mesh may rasterise a few
    interior pixels differently; those must not become unlabelled anomalies).
    """
    scene = make_scene(kind, model, pose, rng, renderer.size)
    clean = renderer.render(scene.clean, pose)
    defective = renderer.render(scene.defective, pose)
    for temporary in {id(m): m for m in scene.clean + scene.defective if m is not model}.values():
        renderer.forget(temporary)
    mask = defect_mask(clean, defective)
    plain = clean if scene.clean == [model] else renderer.render([model], pose)
    inside = mask[..., None]
    composite = Frame(
        np.where(inside, defective.rgb, plain.rgb),
        np.where(mask, defective.depth, plain.depth),
        np.where(mask, defective.covered, plain.covered),
    )
    return plain, composite, mask


def _write_png(path: Path, image: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = cv2.cvtColor(image, cv2.COLOR_RGB2BGR) if image.ndim == 3 else image
    if not cv2.imwrite(str(path), pixels):
        raise UserError(f"cannot write {path}; check free space and permissions.")


def _write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.write_bytes(data)
    except OSError as error:
        raise UserError(f"cannot write {path}; check free space and permissions.") from error


def defect_contrast(clean: Frame, defective: Frame, mask: np.ndarray) -> float:
    """How strongly a defect shows: the mean over its mask of the largest channel's change
    from the clean render, in 8-bit levels (a depth-only change counts 0)."""
    change = np.abs(clean.rgb.astype(np.int16) - defective.rgb).max(axis=2)
    return round(float(change[mask].mean()), 2)


class _Shots:
    """Writes one class's images: the render as it is, or framed on the belt.

    In frame mode each image first draws its placement from its own stream (so the
    renderer is sized to the part's pixels before any defect is drawn) and is recorded
    in ``frames.json`` with the part's box in frame coordinates."""

    def __init__(
        self, renderer: Renderer, folder: Path, seed: int, name: str, framer: Framer | None
    ) -> None:
        self.renderer, self.folder, self.seed, self.name = renderer, folder, seed, name
        self.framer = framer
        self.records: dict[str, dict[str, Any]] = {}
        self._pending: tuple[Any, np.random.Generator] | None = None

    def prepare(self, file_path: str) -> int:
        """Size the renderer for this image; return the size its render will have."""
        if self.framer is not None:
            stream = frame_stream(self.seed, self.name, file_path)
            placement = self.framer.place(stream)
            self.renderer.resize(placement.tile)
            self._pending = (placement, stream)
        return self.renderer.size

    def write(
        self,
        file_path: str,
        view: Frame,
        mask: np.ndarray | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        folder = self.folder
        if self.framer is None:
            _write_png(folder / f"{file_path}.png", view.rgb)
            if mask is not None:
                _write_mask(folder, file_path, mask)
            return
        assert self._pending is not None, "prepare() comes before write()"
        placement, stream = self._pending
        self._pending = None
        frame = self.framer.compose(placement, stream, view.rgb, view.covered)
        frame_mask = None if mask is None else self.framer.mask(placement, mask)
        self._emit(file_path, placement, view, frame, frame_mask, extra)

    def _emit(
        self,
        file_path: str,
        placement: Placement,
        view: Frame,
        frame: np.ndarray,
        frame_mask: np.ndarray | None,
        extra: dict[str, Any] | None,
    ) -> None:
        assert self.framer is not None
        _write_bytes(
            self.folder / f"{file_path}{self.framer.spec.suffix}", self.framer.encode(frame)
        )
        if frame_mask is not None:
            _write_mask(self.folder, file_path, frame_mask)
        self.records[file_path] = {
            "box": box_of(placement, view.covered, self.framer),
            "cut": self.framer.cut(placement, view.covered),
            "tile": placement.tile,
            "at": [placement.x, placement.y],
            "belt_offset": placement.belt_offset,
            "gain": round(placement.gain, 4),
            "shift": [round(v, 2) for v in placement.shift],
            **(extra or {}),
        }

    def shows(self, mask: np.ndarray, needed: int) -> bool:
        """Whether the prepared frame shows ``needed`` pixels of a render's defect mask: a
        part across the frame's edge may lose its defect there, and is then drawn again."""
        if self.framer is None:
            return True
        assert self._pending is not None, "prepare() comes before shows()"
        return int(self.framer.mask(self._pending[0], mask).sum()) >= needed

    def write_scratched(self, file_path: str, view: Frame, rng: np.random.Generator) -> bool:
        """A good view framed with a scratch drawn in camera pixels on its visible part
        (``frame_scratches``); False, with nothing written, when no scratch fits there."""
        assert self.framer is not None and self._pending is not None
        spec = self.framer.spec
        assert spec.thin_px is not None
        placement, stream = self._pending
        pasted = self.framer.paste(placement, view.rgb, view.covered)
        part = self.framer.mask(placement, view.covered)
        scratch = draw_scratch(pasted, part, spec.thin_px, spec.thin_contrast, rng)
        if scratch is None:
            return False
        self._pending = None
        frame = self.framer.sensor(scratch.frame, placement, stream)
        self._emit(file_path, placement, view, frame, scratch.mask, scratch.record)
        return True

    def finish(self) -> None:
        if self.framer is not None:
            sidecar = {"frame": [self.framer.spec.width, self.framer.spec.height]}
            sidecar["images"] = self.records  # type: ignore[assignment]
            (self.folder / "frames.json").write_text(json.dumps(sidecar, indent=1) + "\n")


def _write_mask(folder: Path, file_path: str, mask: np.ndarray) -> None:
    _split, kind, n = file_path.split("/")
    _write_png(folder / "ground_truth" / kind / f"{n}_mask.png", mask.astype(np.uint8) * 255)


def scratch_count(counts: ViewCounts, frame: FrameSpec | None) -> int:
    """Images of ``test/Scratches`` per class: a defect kind's count when ``--thin-px``."""
    return counts.test_per_defect if frame is not None and frame.thin_px is not None else 0


def check_thin_quality(frame: FrameSpec, kinds: Sequence[str]) -> None:
    """Refuse JPEG too lossy for the thin kinds: a 1-3 px crack does not survive it."""
    thin = [kind for kind in kinds if kind in THIN_KINDS]
    thin += [SCRATCH_KIND] if frame.thin_px is not None else []
    if thin and 0 < frame.jpeg < THIN_JPEG_QUALITY:
        raise UserError(
            f"--jpeg-quality {frame.jpeg} would blur {thin[0]} (1-3 camera pixels wide) away; "
            f"use {THIN_JPEG_QUALITY} or more, or 0 for PNG."
        )


def _write_empty_belt(framer: Framer, out: Path, seed: int, advance: Callable[[], None]) -> None:
    """``belt.png`` (the belt a line photographs once) and the frames without a part."""
    _write_png(out / "belt.png", framer.belt_photo())
    for n in range(framer.spec.empty):
        stream = frame_stream(seed, "empty", str(n))
        frame = framer.compose(framer.place_empty(stream), stream)
        _write_bytes(out / "empty" / f"{n}{framer.spec.suffix}", framer.encode(frame))
        advance()


def _frame_entry(file_path: str, pose: CameraPose) -> dict[str, Any]:
    matrix = np.round(pose.camera_to_world, 6).tolist()
    return {"file_path": file_path, "transform_matrix": matrix}


def _kind_stream(
    rng: np.random.Generator, seed: int, model: Model3D, kind: str
) -> np.random.Generator:
    """The class's own stream for the default kinds (so their bytes never change); a
    stream of its own for each newer kind (so adding one never moves another)."""
    if kind not in NEWER_GENERATORS:
        return rng
    return np.random.default_rng([seed, zlib.crc32(model.name.encode()), zlib.crc32(kind.encode())])


def _visible(kind: str, clean: Frame, defective: Frame, mask: np.ndarray, needed: int) -> bool:
    """Large enough to count. A newer kind must also change the colour of that many pixels:
    a shallow dent seen head-on may move only depth, which no photo shows."""
    if mask.sum() < needed:
        return False
    if kind not in NEWER_GENERATORS:
        return True
    colour = np.abs(clean.rgb.astype(np.int16) - defective.rgb).max(axis=2) > COLOUR_TOLERANCE
    return int(colour.sum()) >= needed


def _render_class(
    renderer: Renderer,
    model: Model3D,
    folder: Path,
    counts: ViewCounts,
    seed: int,
    advance: Callable[[], None],
    kinds: Sequence[str] = DEFECT_KINDS,
    framer: Framer | None = None,
) -> None:
    rng = np.random.default_rng([seed, zlib.crc32(model.name.encode())])
    shots = _Shots(renderer, folder, seed, model.name, framer)
    frames = []
    for split, count in (("train", counts.train), ("test", counts.test_good)):
        for n in range(count):
            pose = sample_pose(rng)
            name = f"{split}/good/{n}"
            shots.prepare(name)
            shots.write(name, renderer.render([model], pose))
            frames.append(_frame_entry(name, pose))
            advance()
    for kind in kinds:
        stream = _kind_stream(rng, seed, model, kind)
        for n in range(counts.test_per_defect):
            name = f"test/{kind}/{n}"
            needed = min_mask_pixels(shots.prepare(name))
            for _ in range(MAX_DRAWS):
                pose = sample_pose(stream)
                plain, defective, mask = render_defect_view(renderer, model, kind, pose, stream)
                if _visible(kind, plain, defective, mask, needed) and shots.shows(mask, needed):
                    break
            else:
                raise UserError(
                    f"model '{model.name}': no visible {kind} defect in {MAX_DRAWS} draws; "
                    "the mesh is probably far too thin or degenerate, export a solid part."
                )
            contrast = defect_contrast(plain, defective, mask)
            extra = {"defect_px": int(mask.sum()), "contrast": contrast}
            shots.write(name, defective, mask, extra)
            frames.append(_frame_entry(name, pose))
            advance()
    if framer is not None and framer.spec.thin_px is not None:
        _render_scratches(renderer, model, shots, counts, seed, advance, frames)
    shots.finish()
    transforms = {"camera_angle_x": math.radians(FOV_DEGREES), "frames": frames}
    (folder / "transforms.json").write_text(json.dumps(transforms, indent=1) + "\n")


def _render_scratches(
    renderer: Renderer,
    model: Model3D,
    shots: _Shots,
    counts: ViewCounts,
    seed: int,
    advance: Callable[[], None],
    frames: list[dict[str, Any]],
) -> None:
    """``test/Scratches``: good views, framed, each with a scratch in camera pixels. Its
    own stream, so asking for it never moves another kind's images."""
    stream = np.random.default_rng(
        [seed, zlib.crc32(model.name.encode()), zlib.crc32(SCRATCH_KIND.encode())]
    )
    for n in range(counts.test_per_defect):
        name = f"test/{SCRATCH_KIND}/{n}"
        shots.prepare(name)
        for _ in range(MAX_DRAWS):
            pose = sample_pose(stream)
            if shots.write_scratched(name, renderer.render([model], pose), stream):
                break
        else:
            raise UserError(
                f"model '{model.name}': no {SCRATCH_KIND} of the asked --thin-px fits on the "
                f"part in {MAX_DRAWS} views; raise --part-scale or narrow --thin-px."
            )
        frames.append(_frame_entry(name, pose))
        advance()


def manifest(
    meshes: Sequence[str],
    counts: ViewCounts,
    size: int,
    seed: int,
    background: tuple[int, int, int],
    kinds: Sequence[str] = DEFECT_KINDS,
    frame: FrameSpec | None = None,
) -> dict[str, Any]:
    """What ``dataset.json`` records: enough to tell whether a folder holds this dataset.

    A framed render adds ``frame`` (its ``FrameSpec``); a render without one keeps the
    manifest it always had."""
    classes = []
    for spec in meshes:
        name, digest = spec_identity(spec)
        classes.append({"name": name, "mesh": spec, "sha256": digest})
    names = [c["name"] for c in classes]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UserError(
            f"two meshes would make the same class {duplicates[0]!r}; rename one of the files."
        )
    wanted = {
        "generator": "padformer-edge synth",
        "layout": "MAD-Sim",
        "format_version": FORMAT_VERSION,
        "renderer": {"name": "pybullet TinyRenderer", "pybullet": version("pybullet")},
        "seed": seed,
        "size": size,
        "background": list(background),
        "camera_fov_degrees": FOV_DEGREES,
        "counts": {
            "train_good": counts.train,
            "test_good": counts.test_good,
            "test_per_defect": counts.test_per_defect,
        },
        "defect_kinds": list(kinds),
        "classes": classes,
    }
    if frame is not None:
        wanted["frame"] = frame.manifest()
    return wanted


def _check_output(out: Path, wanted: dict[str, Any]) -> bool:
    """True when ``out`` already holds exactly this dataset; raise when it holds another."""
    if not out.exists():
        return False
    if not out.is_dir():
        raise UserError(f"output {out} is a file; choose a folder for --out.")
    if not any(out.iterdir()):
        return False
    try:
        existing = json.loads((out / "dataset.json").read_text())
    except (OSError, ValueError):
        existing = None
    if existing == wanted:
        return True
    raise UserError(
        f"output folder {out} already holds a different dataset or other files; "
        "choose another --out or delete it first."
    )


def render_dataset(
    meshes: Sequence[str],
    out: str | Path,
    counts: ViewCounts = ViewCounts(),
    size: int = 256,
    seed: int = 0,
    background: tuple[int, int, int] = (255, 255, 255),
    progress: Callable[[int, int], None] | None = None,
    defects: Sequence[str] = DEFECT_KINDS,
    frame: FrameSpec | None = None,
) -> Path:
    """Render one class per mesh spec (a path, ``builtin:NAME`` or ``procedural:SEED:INDEX``)
    into ``out``; return it.

    ``progress(done, total)`` is called after every image. When ``out`` already holds the
    same dataset (same meshes, counts, size, seed, background and renderer) nothing is
    rendered again. ``defects`` lists kind names or family words (``resolve_kinds``);
    the default is MAD-Sim's three, rendered exactly as before the newer kinds existed.
    ``frame`` places every image on a belt in a camera frame (``frames.FrameSpec``): each
    class then gets ``frames.json`` with the part's box per image, and the dataset gets
    ``belt.png`` (the empty belt) and ``frame.empty`` frames without a part in ``empty/``;
    ``frame.thin_px`` adds ``test/Scratches`` (scratches drawn in camera pixels) to each
    class, and ``frame.edge_cut`` places that share of the parts across the frame's edge.
    """
    if not meshes:
        raise UserError("no mesh given; pass --mesh PATH or --mesh builtin:NAME.")
    if not 32 <= size <= 2048:
        raise UserError(f"image size {size} is out of range; choose --size from 32 to 2048.")
    if min(counts.train, counts.test_good, counts.test_per_defect) < 1:
        raise UserError("every view count must be at least 1; raise the --*-views options.")
    log = get_logger(
        "padformer_edge_training.synth"
    )  # at call time, so the CLI's logging set-up applies
    out = Path(out)
    kinds = resolve_kinds(defects)
    if frame is not None:
        check_thin_quality(frame, kinds)
    wanted = manifest(meshes, counts, size, seed, background, kinds, frame)
    if _check_output(out, wanted):
        log.info("synth.already_rendered", out=str(out))
        return out
    models = [load_model(spec) for spec in meshes]
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.rendering-", dir=out.parent))
    total, done = counts.per_class_with(kinds) * len(models), 0
    framer = Framer(frame, seed, background) if frame is not None else None
    total += frame.empty if frame is not None else 0
    total += scratch_count(counts, frame) * len(models)

    def advance() -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(done, total)

    try:
        with Renderer(size, background) as renderer:
            for model in models:
                log.info("synth.class", name=model.name, faces=model.face_count)
                _render_class(
                    renderer, model, staging / model.name, counts, seed, advance, kinds, framer
                )
                renderer.clear()
        if framer is not None:
            _write_empty_belt(framer, staging, seed, advance)
        (staging / "dataset.json").write_text(json.dumps(wanted, indent=1) + "\n")
        if out.exists():
            out.rmdir()
        os.replace(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    log.info("synth.done", out=str(out), images=total)
    return out
