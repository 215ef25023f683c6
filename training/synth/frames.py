"""Camera frames: the rendered part placed on a conveyor belt in a frame of a camera's size.

A line camera frames the belt, not the part: the part covers a share of the frame at a
position that changes, the belt shows seams and marks, the light drifts from frame to
frame and the sensor adds noise before the camera's JPEG encoder. ``FrameSpec`` says how
such frames look; ``Framer`` makes them from a square render of the part at the pixel size
it occupies in the frame (so a defect's size is in camera pixels), pasting only the pixels
the renderer covered (TinyRenderer does not anti-alias, so that cover is exact).

The belt is a loop twice the frame's height that travels along the frame's height: each
frame sees it at its own offset, so a seam or a mark is never where the empty-belt photo
(offset 0, ``belt_photo``) shows it. The part turns on the belt with the view's random
roll. Every frame draws from its own stream (seed, class and image name), so the same
seed gives the same bytes and one frame never moves another.

A share of the frames (``edge_cut``) may place the render across the frame's edge, as a
part entering or leaving the camera's view: whatever lands outside is dropped, so the
part's box, its cover and every mask are clipped to the frame (``Framer.window``). The
thin family is drawn on the frame itself, in camera pixels (``frame_scratches``).
"""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import asdict, dataclass
from typing import Any

import cv2
import numpy as np

from padformer_edge.errors import UserError

BELTS = ("plain", "belt", "photo")
LOOP_FRAMES = 2  # the belt loop is this many frame heights long
THIN_JPEG_QUALITY = 90  # below this a 1-px defect does not survive the encoder
MIN_FRAME_SIDE = 64
MAX_FRAME_SIDE = 8192
MIN_PART_PX = 16  # a smaller render shows no defect a mask could hold
MAX_THIN_PX = 8  # wider than this a scratch is no longer the thin family
MIN_THIN_LEVELS = 5  # a change of 4 levels or less is no mask pixel (COLOUR_TOLERANCE)
CUT_SHARE = (0.2, 0.5)  # how much of the render's side an edge-cut frame puts outside


@dataclass(frozen=True)
class FrameSpec:
    """How camera frames look: size, the part's share of the shorter side, belt, light,
    noise and encoding. ``jpeg`` 0 writes PNG."""

    width: int
    height: int
    part_scale: tuple[float, float] = (0.15, 0.6)
    belt: str = "belt"
    light: float = 0.0  # per-frame gain drawn from [1 - light, 1 + light]
    colour: float = 0.0  # per-frame, per-channel shift drawn from [-colour, +colour] levels
    noise: float = 0.0  # sensor noise, standard deviation in 8-bit levels
    jpeg: int = 0  # JPEG quality 1-100; 0 for lossless PNG
    empty: int = 0  # empty-belt frames (no part) written beside the classes
    thin_px: tuple[int, int] | None = None  # scratch widths in frame px; None: no scratches
    thin_contrast: tuple[float, float] = (25.0, 80.0)  # scratch colour change, 8-bit levels
    edge_cut: float = 0.0  # share of part frames that place the part across the frame's edge

    def __post_init__(self) -> None:
        check_frame_spec(self)

    @property
    def shorter(self) -> int:
        return min(self.width, self.height)

    @property
    def suffix(self) -> str:
        return ".jpg" if self.jpeg else ".png"

    def manifest(self) -> dict[str, Any]:
        """What ``dataset.json`` records under ``frame``."""
        entry = asdict(self)
        entry["part_scale"] = list(self.part_scale)
        entry["thin_px"] = list(self.thin_px) if self.thin_px else None
        entry["thin_contrast"] = list(self.thin_contrast)
        return entry


def check_frame_spec(spec: FrameSpec) -> None:
    """Refuse a spec no camera frame could follow, with one sentence naming the fix."""
    for name, side in (("width", spec.width), ("height", spec.height)):
        if not MIN_FRAME_SIDE <= side <= MAX_FRAME_SIDE:
            raise UserError(
                f"frame {name} {side} is out of range; choose --frame WIDTHxHEIGHT with each "
                f"side from {MIN_FRAME_SIDE} to {MAX_FRAME_SIDE}."
            )
    low, high = spec.part_scale
    if not 0.0 < low <= high <= 1.0:
        raise UserError(
            f"--part-scale {low:g}-{high:g} is not a share of the frame's shorter side; "
            "give LOW-HIGH with 0 < LOW <= HIGH <= 1, e.g. 0.15-0.6."
        )
    if round(low * spec.shorter) < MIN_PART_PX:
        raise UserError(
            f"--part-scale {low:g} makes the part smaller than {MIN_PART_PX} px in a {spec.width}x"
            f"{spec.height} frame; raise its low end or the frame size."
        )
    if spec.belt not in BELTS:
        raise UserError(f"--belt '{spec.belt}' is unknown; choose one of {', '.join(BELTS)}.")
    if not 0.0 <= spec.light < 1.0:
        raise UserError(f"--light-gain {spec.light:g} is out of range; choose 0 to below 1.")
    if not 0.0 <= spec.colour <= 64.0:
        raise UserError(f"--colour-shift {spec.colour:g} is out of range; choose 0 to 64 levels.")
    if not 0.0 <= spec.noise <= 32.0:
        raise UserError(f"--noise {spec.noise:g} is out of range; choose 0 to 32 levels.")
    if not 0 <= spec.jpeg <= 100:
        raise UserError(
            f"--jpeg-quality {spec.jpeg} is out of range; choose 1 to 100, or 0 for PNG."
        )
    if spec.empty < 0:
        raise UserError(f"--empty-frames {spec.empty} is negative; choose 0 or more.")
    if spec.thin_px is not None and not 1 <= spec.thin_px[0] <= spec.thin_px[1] <= MAX_THIN_PX:
        raise UserError(
            f"--thin-px {spec.thin_px[0]}-{spec.thin_px[1]} is out of range; give LOW-HIGH "
            f"whole pixels with 1 <= LOW <= HIGH <= {MAX_THIN_PX}, e.g. 1-3."
        )
    low_levels, high_levels = spec.thin_contrast
    if not MIN_THIN_LEVELS <= low_levels <= high_levels <= 255:
        raise UserError(
            f"--thin-contrast {low_levels:g}-{high_levels:g} is out of range; give LOW-HIGH "
            f"levels with {MIN_THIN_LEVELS} <= LOW <= HIGH <= 255, e.g. 25-80."
        )
    if not 0.0 <= spec.edge_cut <= 1.0:
        raise UserError(f"--edge-cut {spec.edge_cut:g} is not a share; choose 0 to 1.")


def parse_frame_size(text: str) -> tuple[int, int]:
    """'2448x2048' into (width, height)."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if not match:
        raise UserError(f"--frame '{text}' is not a size; give WIDTHxHEIGHT, e.g. 2448x2048.")
    return int(match[1]), int(match[2])


def parse_share_range(
    text: str, option: str = "--part-scale", example: str = "0.15-0.6"
) -> tuple[float, float]:
    """'0.15-0.6' (or one number) into (low, high)."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(?:-\s*([0-9]*\.?[0-9]+)\s*)?", text)
    if not match:
        raise UserError(f"{option} '{text}' is not a range; give LOW-HIGH, e.g. {example}.")
    low = float(match[1])
    return low, float(match[2]) if match[2] else low


def parse_pixel_range(text: str) -> tuple[int, int]:
    """'1-3' (or one whole number) into (low, high) pixels for ``--thin-px``."""
    low, high = parse_share_range(text, "--thin-px", "1-3")
    if low != int(low) or high != int(high):
        raise UserError(f"--thin-px '{text}' is not whole pixels; give LOW-HIGH, e.g. 1-3.")
    return int(low), int(high)


@dataclass(frozen=True)
class Placement:
    """Where one frame's part goes and how that frame is lit: all its random draws."""

    tile: int  # side of the square render in camera pixels
    x: int  # the render's top-left corner in the frame
    y: int
    belt_offset: int  # the belt loop's row at the frame's top
    gain: float
    shift: tuple[float, float, float]


def frame_stream(seed: int, group: str, name: str) -> np.random.Generator:
    """A frame's own stream: the same seed, group (class or 'empty') and name, same draws."""
    return np.random.default_rng([seed, zlib.crc32(group.encode()), zlib.crc32(name.encode())])


class Framer:
    """Makes the frames of one render: the belt loop is built once and shared by all."""

    def __init__(self, spec: FrameSpec, seed: int, background: tuple[int, int, int]) -> None:
        self.spec = spec
        self._seed = seed
        self.loop = make_belt(spec, np.random.default_rng([seed, zlib.crc32(b"belt")]), background)

    def place(self, rng: np.random.Generator) -> Placement:
        """Draw the part's size and position and the frame's light (in this order)."""
        spec = self.spec
        low, high = spec.part_scale
        tile = round(rng.uniform(low, high) * spec.shorter)
        x = int(rng.integers(0, spec.width - tile + 1))
        y = int(rng.integers(0, spec.height - tile + 1))
        if spec.edge_cut and rng.random() < spec.edge_cut:  # no draw at all without the option
            x, y = self._across_edge(rng, tile, x, y)
        return self._lit(rng, tile, x, y)

    def _across_edge(self, rng: np.random.Generator, tile: int, x: int, y: int) -> tuple[int, int]:
        """Move the render over one of the frame's four edges by a ``CUT_SHARE`` of its
        side: never more than half, so the part's centre (where it is drawn) stays in."""
        outside = max(1, round(rng.uniform(*CUT_SHARE) * tile))
        side = int(rng.integers(0, 4))
        if side == 0:
            return -outside, y
        if side == 1:
            return self.spec.width - tile + outside, y
        if side == 2:
            return x, -outside
        return x, self.spec.height - tile + outside

    def place_empty(self, rng: np.random.Generator) -> Placement:
        """The draws of a frame without a part: the belt's offset and the light."""
        return self._lit(rng, 0, 0, 0)

    def _lit(self, rng: np.random.Generator, tile: int, x: int, y: int) -> Placement:
        offset = int(rng.integers(0, self.loop.shape[0]))
        gain = float(rng.uniform(1.0 - self.spec.light, 1.0 + self.spec.light))
        shift = rng.uniform(-self.spec.colour, self.spec.colour, size=3)
        red, green, blue = (float(v) for v in shift)
        return Placement(tile, x, y, offset, gain, (red, green, blue))

    def belt_window(self, offset: int) -> np.ndarray:
        """The belt as the camera sees it with the loop's row ``offset`` at the top."""
        rows = (np.arange(self.spec.height) + offset) % self.loop.shape[0]
        return self.loop[rows]

    def window(self, placement: Placement) -> tuple[tuple[slice, slice], tuple[slice, slice]]:
        """The part of the render that lands in the frame: (frame rows, cols), (tile rows,
        cols). The whole tile unless the placement crosses the frame's edge."""
        spec = self.spec
        x0, y0 = max(placement.x, 0), max(placement.y, 0)
        x1 = min(placement.x + placement.tile, spec.width)
        y1 = min(placement.y + placement.tile, spec.height)
        frame = (slice(y0, max(y0, y1)), slice(x0, max(x0, x1)))
        tile = (
            slice(y0 - placement.y, max(y0, y1) - placement.y),
            slice(x0 - placement.x, max(x0, x1) - placement.x),
        )
        return frame, tile

    def mask(self, placement: Placement, tile_mask: np.ndarray) -> np.ndarray:
        """A render's mask (tile coordinates) in frame coordinates, cut at the frame's edge."""
        full = np.zeros((self.spec.height, self.spec.width), dtype=bool)
        if placement.tile:
            inside, tile = self.window(placement)
            full[inside] = tile_mask[tile]
        return full

    def paste(
        self,
        placement: Placement,
        rgb: np.ndarray | None = None,
        covered: np.ndarray | None = None,
    ) -> np.ndarray:
        """The belt with the render's covered pixels on it, before light and noise."""
        frame = self.belt_window(placement.belt_offset).copy()
        if rgb is not None and covered is not None:
            inside, tile = self.window(placement)
            region = frame[inside]
            shown = covered[tile]
            region[shown] = rgb[tile][shown]
        return frame

    def compose(
        self,
        placement: Placement,
        rng: np.random.Generator,
        rgb: np.ndarray | None = None,
        covered: np.ndarray | None = None,
    ) -> np.ndarray:
        """The frame: the render's covered pixels on the belt, then light and noise.

        ``rng`` is the frame's stream after ``place``; it draws the noise last."""
        return self.sensor(self.paste(placement, rgb, covered), placement, rng)

    def sensor(
        self, frame: np.ndarray, placement: Placement, rng: np.random.Generator
    ) -> np.ndarray:
        spec = self.spec
        if spec.light == 0 and spec.colour == 0 and spec.noise == 0:
            return frame
        pixels = frame.astype(np.float32) * np.float32(placement.gain)
        pixels += np.asarray(placement.shift, dtype=np.float32)
        if spec.noise:
            pixels += rng.standard_normal(pixels.shape, dtype=np.float32) * np.float32(spec.noise)
        return np.clip(np.rint(pixels), 0, 255).astype(np.uint8)

    def cut(self, placement: Placement, covered: np.ndarray) -> bool:
        """Whether the frame's edge cuts off some of the part's pixels."""
        return int(self.mask(placement, covered).sum()) < int(covered.sum())

    def belt_photo(self) -> np.ndarray:
        """The empty belt at offset 0 under the nominal light, with the sensor's noise: the
        one photo a line takes of its belt for ``profile create --background``."""
        rng = frame_stream(self._seed, "belt-photo", "0")
        nominal = Placement(0, 0, 0, 0, 1.0, (0.0, 0.0, 0.0))
        return self.sensor(self.belt_window(0).copy(), nominal, rng)

    def encode(self, frame: np.ndarray) -> bytes:
        """The frame's file bytes: JPEG at the spec's quality, or PNG."""
        bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)
        if self.spec.jpeg:
            ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, self.spec.jpeg])
        else:
            ok, data = cv2.imencode(".png", bgr)
        if not ok:
            raise UserError("OpenCV could not encode a frame; check the frame size.")
        return data.tobytes()


def box_of(placement: Placement, covered: np.ndarray, framer: Framer) -> list[int] | None:
    """The part's visible box in frame coordinates, ``[x0, y0, x1, y1]`` with x1, y1
    exclusive, clipped to the frame; None when none of the part is in the frame."""
    shown = framer.mask(placement, covered)
    rows = np.flatnonzero(shown.any(axis=1))
    cols = np.flatnonzero(shown.any(axis=0))
    if len(rows) == 0:
        return None
    return [int(cols[0]), int(rows[0]), int(cols[-1]) + 1, int(rows[-1]) + 1]


def make_belt(
    spec: FrameSpec, rng: np.random.Generator, background: tuple[int, int, int]
) -> np.ndarray:
    """The belt loop, ``(LOOP_FRAMES * height, width, 3)`` uint8.

    ``plain``: the background colour. ``belt``: a rubber or PVC belt: a base colour, a fine
    weave, a faint mottle, seams across the belt (a darker band with a lighter lip) and
    scuffs and spots. ``photo``: a photographed surface: a stronger mottle at
    two scales under light that falls off across the belt, with no straight features.
    """
    height, width = LOOP_FRAMES * spec.height, spec.width
    if spec.belt == "plain":
        return np.broadcast_to(np.asarray(background, np.uint8), (height, width, 3)).copy()
    base = rng.uniform(45, 150) * np.ones(3) + rng.uniform(-12, 12, size=3)
    if spec.belt == "belt":
        shade = 1.0 + 0.08 * _mottle(rng, height, width, cells=48)
        period = height / round(height / rng.uniform(5.0, 9.0))  # whole periods: it wraps
        rows = np.sin(np.arange(height, dtype=np.float32) * np.float32(2 * math.pi / period))
        cols = np.sin(np.arange(width, dtype=np.float32) * np.float32(2 * math.pi / period))
        shade += np.float32(0.03) * rows[:, None] * cols[None, :]
        _seams(rng, shade, spec.shorter)
        _marks(rng, shade, spec.shorter)
    else:
        shade = 1.0 + 0.12 * _mottle(rng, height, width, cells=12)
        shade += 0.07 * _mottle(rng, height, width, cells=96)
        across = np.linspace(-0.5, 0.5, width, dtype=np.float32)
        tilt, bow = rng.uniform(-0.15, 0.15), rng.uniform(0.0, 0.4)
        shade *= (1.0 + tilt * across - bow * across**2)[None, :]  # the lamps light across
    colour = shade[..., None] * base.astype(np.float32)
    return np.clip(np.rint(colour), 0, 255).astype(np.uint8)


def _mottle(rng: np.random.Generator, height: int, width: int, cells: int) -> np.ndarray:
    """Smooth noise in [-1, 1] with about ``cells`` blobs along the width; it wraps along the
    height so the loop has no step where it closes."""
    across = cells
    along = max(2, round(cells * height / width))
    coarse = rng.uniform(-1.0, 1.0, size=(along, across)).astype(np.float32)
    wrapped = np.concatenate([coarse[-2:], coarse, coarse[:2]], axis=0)
    step = height / along
    big = cv2.resize(wrapped, (width, round(step * (along + 4))), interpolation=cv2.INTER_CUBIC)
    start = round(2 * step)
    return np.clip(big[start : start + height], -1.0, 1.0)


def _seams(rng: np.random.Generator, shade: np.ndarray, scale: int) -> None:
    """One to three seams across the belt, each a dark band with a lighter lip."""
    height = shade.shape[0]
    for _ in range(int(rng.integers(1, 4))):
        row = int(rng.integers(0, height))
        band = max(2, round(rng.uniform(0.002, 0.006) * scale))
        depth = rng.uniform(0.12, 0.25)
        rows = np.arange(row, row + band) % height
        shade[rows] *= 1.0 - depth
        shade[(row + band) % height] *= 1.0 + depth / 2


def _marks(rng: np.random.Generator, shade: np.ndarray, scale: int) -> None:
    """Scuffs and spots: small ellipses a little darker or lighter than the belt."""
    height, width = shade.shape
    spots = np.ones_like(shade)
    for _ in range(int(rng.integers(10, 40))):
        centre = (int(rng.integers(0, width)), int(rng.integers(0, height)))
        axes = (
            max(1, int(rng.uniform(0.002, 0.02) * scale)),
            max(1, int(rng.uniform(0.001, 0.008) * scale)),
        )
        factor = 1.0 + rng.uniform(-0.2, 0.12)
        cv2.ellipse(spots, centre, axes, float(rng.uniform(0, 180)), 0, 360, factor, -1)
    shade *= spots
