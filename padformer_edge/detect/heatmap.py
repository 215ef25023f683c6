"""Anomaly heatmaps as files: a colour overlay for people and the raw map for tools.

Files are written to a temporary name in the destination folder and moved into place
with ``os.replace``, so a viewer, a sync job or a crashed run never sees half a PNG.

The overlay is drawn and stored at most ``MAX_OVERLAY_SIDE`` pixels on its longer side:
a person looks at it on a screen, and encoding a camera's 5 megapixels as PNG cost the
daemon more CPU than the rest of an image's host-side work. The raw map (for tools)
keeps the image's full size.

A detection's map comes on the grid it was read on (``Detection.anomaly_map``: often the
comparator's cells), covering a box of the image (default: all of it); it is resized
once, here, to what is drawn: straight to the overlay's size through the shared
``map_geometry.frame_map`` when it is smaller than the overlay, and shrunk without
aliasing (``_shrunk``) when it was read at a large frame's own size.

The overlay is encoded as one of ``OVERLAY_ENCODINGS``: PNG for ``detect``'s files (a
tool may read them back exactly), JPEG for the daemon's by default
(``worker.heatmap_format``): a person looks at it, and JPEG encodes it for a fraction of
deflate's CPU in a file no larger.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from padformer_edge.detect.map_geometry import Box, frame_map
from padformer_edge.files.atomic import write_atomic
from padformer_edge.reporting.numbers import plain

HEATMAP_FIX = "choose a writable --out folder"

OVERLAY_ALPHA = 0.5  # equal weight: the defect stays visible under the colour

# With a threshold, the map's colour scale is fixed by it rather than by the image:
# 0 .. threshold fills the calm half of JET (blue to green) and threshold .. HOT_FACTOR x
# threshold the hot half (yellow to red). A good part then looks calm on every image, a
# defect turns hot, and the same map value gets the same colour on every image of a profile.
HOT_FACTOR = 2.0
CALM_SHARE = 0.5  # the part of the colour map below the threshold
OUTLINE_BGR = (255, 0, 255)  # magenta: a colour JET never draws, so the outline reads as one
IGNORED_BGR = (255, 255, 255)  # white: an ignored region's outline, never JET's either
MIN_MARK_SHARE = 0.05  # radius of the ring around a tiny region, as a share of the short side
MAX_OVERLAY_SIDE = 1024
"""The overlay's longest side in pixels: a screen's worth (the page scales it over the
camera image); larger camera images are shrunk before drawing."""

UNCOMPRESSED_PNG = [
    cv2.IMWRITE_PNG_COMPRESSION, 0, cv2.IMWRITE_PNG_FILTER, cv2.IMWRITE_PNG_FILTER_NONE,
]  # fmt: skip
"""A stored (level 0) PNG without row filters: zlib then only copies the rows, where
deflate (even OpenCV's fastest, the default) spends most of an overlay's encoding CPU on
a camera's noisy pixels; row filters would cost CPU and save nothing without deflate."""
JPEG_OVERLAY = [
    cv2.IMWRITE_JPEG_QUALITY, 90,
    cv2.IMWRITE_JPEG_SAMPLING_FACTOR, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444,
]  # fmt: skip
"""Quality 90 with full-resolution colour (4:4:4): the default 4:2:0 halves the colour
planes, which turns the one-pixel magenta outline of a 224-px overlay into a grey smear
(its pixels moved by about 100 levels, against 3 at 4:4:4)."""


@dataclass(frozen=True)
class OverlayEncoding:
    """How an overlay is stored: the file suffix and OpenCV's ``imencode`` settings."""

    suffix: str
    params: tuple[int, ...]


OVERLAY_ENCODINGS = {
    "jpeg": OverlayEncoding(".jpg", tuple(JPEG_OVERLAY)),
    "png": OverlayEncoding(".png", ()),
    "png-stored": OverlayEncoding(".png", tuple(UNCOMPRESSED_PNG)),
}
"""The overlay's formats by the name ``worker.heatmap_format`` takes: ``png`` is
OpenCV's fast default deflate, ``png-stored`` the same pixels uncompressed (least CPU,
largest files), ``jpeg`` ``JPEG_OVERLAY`` (a few per cent of a pixel's value off)."""

JET_COLOURS = cv2.applyColorMap(np.arange(256, dtype=np.uint8).reshape(256, 1), cv2.COLORMAP_JET)
"""OpenCV's JET colour map as a 256 x 1 BGR table, built once: given as a user colour
map, ``applyColorMap`` draws the same colours without rebuilding the table on every
call, which was most of its cost on a 224-px overlay."""

LABEL_FONT = cv2.FONT_HERSHEY_SIMPLEX
MIN_LABEL_SCALE = 0.3
"""Below this font scale a one-line label is split into its score and threshold lines."""


@dataclass(frozen=True)
class Label:
    """How the score label is drawn: its lines, font scale and thickness, and the black
    box behind it (from the top-left corner), all inside the picture."""

    lines: tuple[str, ...]
    scale: float
    thickness: int
    margin: int
    line_height: int  # one line's ascent plus descent (baseline) in pixels
    width: int
    height: int
    descents: tuple[int, ...]
    """Each line's descent below its baseline, as measured for the layout (drawing
    needs it, and measuring a line again cost as much as drawing it)."""


def _measure(lines: tuple[str, ...], scale: float) -> tuple[int, int, int, int, tuple[int, ...]]:
    """(widest line, one line's height with its baseline, thickness, margin, each line's
    descent) at ``scale``."""
    thickness = max(1, round(scale * 2))
    sizes = [cv2.getTextSize(line, LABEL_FONT, scale, thickness) for line in lines]
    widest = max(width for (width, _), _ in sizes)
    tallest = max(height + baseline for (_, height), baseline in sizes)
    descents = tuple(baseline for _, baseline in sizes)
    return widest, tallest, thickness, max(1, int(4 * scale)), descents


def label_layout(parts: tuple[str, ...], shape: tuple[int, ...]) -> Label:
    """The label of ``parts`` (score, and threshold when there is one) for a picture of
    ``shape``: one line at the font scale the picture's size asks for, shrunk until it fits
    the width; where that would make it smaller than ``MIN_LABEL_SCALE``, the parts go on
    lines of their own. A small picture (224 px) therefore shows the whole label instead
    of cutting it off at the right edge."""
    height, width = shape[:2]
    wanted = max(0.4, min(height, width) / 400.0)
    layouts = [(" / ".join(parts),)] + ([parts] if len(parts) > 1 else [])
    for index, lines in enumerate(layouts):
        scale = wanted
        widest, line, thickness, margin, descents = _measure(lines, scale)
        while widest > width - 2 * margin and scale > 0.01:
            # the glyphs' thickness and rounding do not follow the scale exactly: shrink
            # by the ratio, and a little more, until it is measured to fit
            scale *= min(0.98, max(width - 2 * margin, 1) / widest)
            widest, line, thickness, margin, descents = _measure(lines, scale)
        if scale >= MIN_LABEL_SCALE or index == len(layouts) - 1:
            break
    box_height = len(lines) * line + (len(lines) + 1) * margin
    return Label(
        lines, scale, thickness, margin, line, widest + 2 * margin, box_height, descents
    )


def draw_label(overlay: np.ndarray, parts: tuple[str, ...]) -> Label:
    """White text on a black box in the top-left corner of ``overlay`` (in place)."""
    label = label_layout(parts, overlay.shape)
    cv2.rectangle(overlay, (0, 0), (label.width, label.height), (0, 0, 0), -1)
    for row, text in enumerate(label.lines):
        baseline_y = label.margin + row * (label.line_height + label.margin) + label.line_height
        origin = (label.margin, baseline_y - label.descents[row])
        cv2.putText(overlay, text, origin, LABEL_FONT, label.scale, (255, 255, 255),
                    label.thickness, cv2.LINE_AA)  # fmt: skip
    return label


def overlay_shape(shape: tuple[int, ...]) -> tuple[int, int]:
    """(height, width) of the overlay of a picture of ``shape``: the same, or shrunk
    (aspect kept) so that the longer side is ``MAX_OVERLAY_SIDE``."""
    height, width = shape[:2]
    longer = max(height, width)
    if longer <= MAX_OVERLAY_SIDE:
        return height, width
    factor = MAX_OVERLAY_SIDE / longer
    return max(1, round(height * factor)), max(1, round(width * factor))


def _shrunk(array: np.ndarray, size: tuple[int, int], *, covering: bool = False) -> np.ndarray:
    """``array`` resized to (height, width) ``size``, with no aliasing.

    Halved by area averaging while it is at least twice the size: OpenCV averages 2 x 2
    blocks on a fast path, where one area resize by a factor like 2.39 (a 5-megapixel
    camera's to 1024 px) took three times as long for the same box average. The last
    step, by a factor under 2, is bilinear: an area resize by a factor that is not a
    whole number (1224 to 1024 px) took about six times as long as a bilinear one and
    most of a 5-megapixel overlay's drawing, for a difference no one sees on an overlay;
    under 2 every pixel still reaches the result. ``covering`` (a mask): the last step
    stays an area resize, so that a pixel any set pixel covers stays non-zero."""
    height, width = array.shape[:2]
    while height >= 2 * size[0] and width >= 2 * size[1] and height % 2 == 0 and width % 2 == 0:
        height, width = height // 2, width // 2
        array = cv2.resize(array, (width, height), interpolation=cv2.INTER_AREA)
    if (height, width) == size:
        return array
    last = cv2.INTER_AREA if covering else cv2.INTER_LINEAR
    return cv2.resize(array, (size[1], size[0]), interpolation=last)


def colour_indices(
    anomaly_map: np.ndarray, vmax: float | None = None, threshold: float | None = None
) -> np.ndarray:
    """Each map value's index (``uint8``, 0..255) on the colour map.

    Without a threshold the map is scaled linearly to ``vmax`` (default: its own maximum),
    which shows where the map is highest but makes every image look alarming. With a
    threshold, 0..threshold maps to the calm half and threshold..``vmax`` (default
    ``HOT_FACTOR`` x threshold) to the hot half, so colours mean the same across images
    (a threshold of 0 or less anchors nothing and is read as none).
    """
    values = anomaly_map.astype(np.float32, copy=False)
    if threshold is None or threshold <= 0:
        # A threshold of 0 or less (every image anomalous) anchors no scale: the image's
        # own, so that a daemon never loses a result over how its heatmap is coloured.
        top = float(values.max()) if vmax is None else float(vmax)
        scaled = np.clip(values / top, 0.0, 1.0) if top > 0 else np.zeros_like(values)
        return (scaled * 255.0).round().astype(np.uint8)
    top = HOT_FACTOR * threshold if vmax is None else float(vmax)
    if top <= threshold:
        raise ValueError(f"heatmap max {top:g} must lie above the threshold {threshold:g}")
    # Each half's scale in the same float32 steps as written out, but in place in two
    # arrays: a temporary array per step cost more than the arithmetic on an overlay.
    calm = np.divide(values, threshold)
    calm *= CALM_SHARE
    scaled = np.subtract(values, threshold)
    scaled /= top - threshold
    scaled *= 1.0 - CALM_SHARE
    scaled += CALM_SHARE
    np.copyto(scaled, calm, where=values <= threshold)
    np.clip(scaled, 0.0, 1.0, out=scaled)
    # Floored, so the threshold itself is the calm half's last index (127), and anything
    # above it lands in the hot half: the values lie in 0..255.999 here, where the cast's
    # truncation is the floor, so no pass of its own.
    scaled *= 255.999
    return scaled.astype(np.uint8)


def above_threshold(anomaly_map: np.ndarray, threshold: float, size: tuple[int, int]) -> np.ndarray:
    """Where ``anomaly_map > threshold``, as a ``uint8`` mask of (height, width) ``size``.

    Compared at the map's own size and then shrunk, with any covered pixel kept: a
    region of a pixel or two above the threshold stays on the smaller overlay, where
    shrinking the map first would average it away."""
    if anomaly_map.shape != size and not float(anomaly_map.max()) > threshold:
        return np.zeros(size, np.uint8)  # most images: nothing above, nothing to shrink
    above = (anomaly_map > threshold).astype(np.uint8)
    if above.shape == size:
        return above
    return (_shrunk(above * np.uint8(255), size, covering=True) > 0).astype(np.uint8)


def overlay_map(
    anomaly_map: np.ndarray,
    frame_size: tuple[int, int],
    size: tuple[int, int],
    box: Box | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(the map to colour, the map to outline) for an overlay of ``size`` of a frame of
    ``frame_size``, from a map covering ``box`` of it, each resized once: a map read at
    the frame's own size (at least the overlay's) is shrunk without aliasing for the
    colours and outlined at its own size (``above_threshold``); a coarser one (cells, a
    shrunk grid, a crop) is brought to the overlay's size by ``map_geometry.frame_map``
    and both are that map."""
    values = anomaly_map.astype(np.float32, copy=False)
    if box is None and values.shape[0] >= size[0] and values.shape[1] >= size[1]:
        return _shrunk(values, size), values
    drawn = frame_map(values, frame_size, box, size)
    return drawn, drawn


def draw_outline(overlay: np.ndarray, above: np.ndarray) -> int:
    """Draw the outline of the ``above`` mask (``above_threshold``) on ``overlay`` in
    place; return how many separate regions it has. The outline keeps a defect findable
    where its colour is small or the image behind it is busy. A region smaller than
    ``MIN_MARK_SHARE`` of the picture (a score just above the threshold often passes it at
    a pixel or two) is also ringed by a circle of that radius, because its own outline
    would be a dot."""
    contours, _ = cv2.findContours(above, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    side = min(above.shape)
    thickness = max(1, round(side / 200))
    cv2.drawContours(overlay, contours, -1, OUTLINE_BGR, thickness, cv2.LINE_8)
    smallest = max(3.0, MIN_MARK_SHARE * side)
    for contour in contours:
        (x, y), radius = cv2.minEnclosingCircle(contour)
        if radius < smallest:
            centre = (round(x), round(y))
            cv2.circle(overlay, centre, round(smallest), OUTLINE_BGR, thickness, cv2.LINE_8)
    return len(contours)


def draw_ignored(
    overlay: np.ndarray, ignored: Sequence[np.ndarray], frame_size: tuple[int, int]
) -> None:
    """Outline each ignored region (``detect.regions``: polygons in frame pixels) on
    ``overlay`` in place, in white, so a reader sees where no defect can be flagged."""
    if not ignored:
        return
    scale = np.array([overlay.shape[1] / frame_size[1], overlay.shape[0] / frame_size[0]])
    thickness = max(1, round(min(overlay.shape[:2]) / 200))
    corners = [np.round(np.asarray(p) * scale).astype(np.int32) for p in ignored]
    cv2.polylines(overlay, corners, True, IGNORED_BGR, thickness, cv2.LINE_8)


def render_overlay(
    image: np.ndarray,
    anomaly_map: np.ndarray,
    score: float,
    vmax: float | None = None,
    threshold: float | None = None,
    box: Box | None = None,
    ignored: Sequence[np.ndarray] = (),
) -> np.ndarray:
    """A BGR ``uint8`` picture: the map (covering ``box`` of the image, default all of
    it: ``overlay_map``) in the JET colour map blended on the image, with the score (and
    threshold, when given) printed in the top-left corner; at most ``MAX_OVERLAY_SIDE``
    pixels on its longer side (``overlay_shape``).

    ``vmax`` fixes the value drawn as full red so that overlays of several images can be
    compared; without it and without ``threshold`` each map is scaled to its own maximum.
    With ``threshold`` (a profile's) the scale is anchored to it (``colour_indices``) and
    the region above it is outlined in magenta; ``ignored`` regions are outlined in white.
    """
    size = overlay_shape(image.shape)
    small_map, outlined = overlay_map(anomaly_map, image.shape[:2], size, box)
    colour = cv2.applyColorMap(colour_indices(small_map, vmax, threshold), JET_COLOURS)
    base = cv2.cvtColor(_shrunk(image, size), cv2.COLOR_RGB2BGR)
    overlay = cv2.addWeighted(base, 1.0 - OVERLAY_ALPHA, colour, OVERLAY_ALPHA, 0.0)
    parts = ("no part",) if math.isnan(score) else (f"score {plain(score)}",)  # detect.framed
    if threshold is not None:
        parts += (f"threshold {plain(threshold)}",)
    draw_ignored(overlay, ignored, image.shape[:2])
    draw_label(overlay, parts)
    if threshold is not None:  # last, so the score label never hides part of the outline
        draw_outline(overlay, above_threshold(outlined, threshold, size))
    return overlay


def write_heatmap(
    path: str | Path,
    image: np.ndarray,
    anomaly_map: np.ndarray,
    score: float,
    *,
    vmax: float | None = None,
    threshold: float | None = None,
    raw_path: str | Path | None = None,
    encoding: str = "png",
    box: Box | None = None,
    ignored: Sequence[np.ndarray] = (),
) -> Path:
    """Write the overlay to ``path`` (at most ``MAX_OVERLAY_SIDE`` px on its longer
    side) in ``encoding`` (a key of ``OVERLAY_ENCODINGS``, whose suffix ``path`` must
    have) and, if asked, the float32 map at the image's size as ``.npy``
    (``map_geometry.frame_map``); ``vmax``, ``threshold``, ``box`` (what part of the
    image the map covers) and ``ignored`` as in ``render_overlay``."""
    frame_size = image.shape[:2]
    if anomaly_map.ndim != 2 or any(
        m > f for m, f in zip(anomaly_map.shape, frame_size, strict=True)
    ):
        raise ValueError(f"map {anomaly_map.shape} does not fit image {frame_size}")
    chosen = OVERLAY_ENCODINGS[encoding]
    if Path(path).suffix.lower() != chosen.suffix:
        raise ValueError(f"a {encoding} heatmap is named *{chosen.suffix}, not {Path(path).name}")
    overlay = render_overlay(image, anomaly_map, score, vmax, threshold, box, ignored)
    ok, encoded = cv2.imencode(chosen.suffix, overlay, list(chosen.params))
    if not ok:
        raise RuntimeError(f"OpenCV failed to encode the heatmap as {encoding}")
    if raw_path is not None:
        buffer = io.BytesIO()
        np.save(buffer, frame_map(anomaly_map, frame_size, box))
        write_atomic(raw_path, buffer.getvalue(), fix=HEATMAP_FIX)
    return write_atomic(path, encoded.tobytes(), fix=HEATMAP_FIX)
