"""Where a found part is cut out of a camera frame, and where its map goes back.

The part's box from ``detect.locate`` is grown by a margin and made square before it is
cut out: the scorer squeezes whatever it is given to its square input, so a square crop
keeps the part's shape (a pose-agnostic comparison must see the part as the references
show it) and a margin keeps its silhouette's edge, where many defects sit, away from the
crop's border. The crop's map is pasted back at that box by the maps' one resize
(``map_geometry.frame_map``), so heatmaps and stored boxes are in frame coordinates.

Numpy and OpenCV only: the torch-free line install imports this module.
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from padformer_edge.detect.locate import BeltLight
from padformer_edge.detect.map_geometry import frame_map

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in frame pixels; x1 and y1 exclusive

MARGIN = 0.1  # chosen on validation: docs/research.md#framed-crop
MAX_EXPOSURE = 2.0  # a light drift beyond this factor is scaled back by this factor only
BELT_GROW = 2  # work pixels of belt kept around the part before the paint


def crop_box(box: Box, height: int, width: int, margin: float = MARGIN) -> Box:
    """The square around ``box`` grown by ``margin`` of its longer side on each side,
    moved to lie inside the frame; a square larger than the frame's shorter side is cut
    to the frame there (the crop is then a rectangle, squeezed like any other)."""
    x0, y0, x1, y1 = box
    side = math.ceil(max(x1 - x0, y1 - y0) * (1 + 2 * margin))
    centre_x, centre_y = (x0 + x1) / 2, (y0 + y1) / 2
    (left, right), (top, bottom) = _span(centre_x, side, width), _span(centre_y, side, height)
    return left, top, right, bottom


def _span(centre: float, side: int, length: int) -> tuple[int, int]:
    """[start, end) of ``side`` pixels centred on ``centre``, shifted inside [0, length)."""
    side = min(side, length)
    start = min(max(0, math.floor(centre - side / 2)), length - side)
    return start, start + side


def crop(frame: np.ndarray, box: Box) -> np.ndarray:
    """The frame's pixels inside ``box`` (a view: nothing is copied)."""
    x0, y0, x1, y1 = box
    return frame[y0:y1, x0:x1]


def relight(pixels: np.ndarray, light: BeltLight | None) -> np.ndarray:
    """``pixels`` (8-bit, channels last) under the belt photo's light: each pixel's
    departure from the frame's belt colour, divided by the frame's exposure (one gain for
    every channel, ``BeltLight.exposure``), added to the photo's belt colour. The belt then
    has the photo's colour exactly, and a part lit brighter or dimmer by the same lamps is
    scaled back; chosen on validation over one gain per channel or a shift alone
    (docs/research.md#framed-light). ``light`` None leaves the pixels as they are."""
    if light is None:
        return pixels
    seen = np.asarray(light.seen, dtype=np.float32)
    photo = np.asarray(light.photo, dtype=np.float32)
    exposure = np.float32(min(max(light.exposure, 1 / MAX_EXPOSURE), MAX_EXPOSURE))
    matched = (pixels.astype(np.float32) - seen) / exposure + photo
    return np.clip(np.rint(matched), 0, 255).astype(np.uint8)


def belt_out(
    pixels: np.ndarray,
    box: Box,
    part_mask: np.ndarray,
    frame_shape: tuple[int, ...],
    colour: np.ndarray,
) -> np.ndarray:
    """The crop ``pixels`` (cut at ``box`` from a frame of ``frame_shape``) with the belt
    around the part painted ``colour``: the belt travels, so its seams, marks and weave
    are never where a reference showed them, and the comparator reads each of its cells as
    a change (docs/research.md#framed-light). ``part_mask`` is the locator's work-scale
    part; grown by ``BELT_GROW`` work pixels and read bilinearly at every crop pixel, it
    is the weight of the pixel against the paint, so the silhouette's edge stays soft."""
    grow = 2 * BELT_GROW + 1
    grown = cv2.dilate(part_mask.astype(np.uint8), np.ones((grow, grow), np.uint8))
    height, width = frame_shape[:2]
    rows, cols = part_mask.shape
    x0, y0, x1, y1 = box
    map_x = ((np.arange(x0, x1, dtype=np.float32) + 0.5) * (cols / width) - 0.5)[None, :]
    map_y = ((np.arange(y0, y1, dtype=np.float32) + 0.5) * (rows / height) - 0.5)[:, None]
    map_x, map_y = (
        np.broadcast_to(map_x, (y1 - y0, x1 - x0)),
        np.broadcast_to(map_y, (y1 - y0, x1 - x0)),
    )
    weight = cv2.remap(grown.astype(np.float32), np.ascontiguousarray(map_x),
                       np.ascontiguousarray(map_y), cv2.INTER_LINEAR,
                       borderMode=cv2.BORDER_REPLICATE)[..., None]  # fmt: skip
    painted = pixels.astype(np.float32) * weight + colour.astype(np.float32) * (1 - weight)
    return np.clip(np.rint(painted), 0, 255).astype(np.uint8)


def paste(crop_map: np.ndarray, box: Box, height: int, width: int) -> np.ndarray:
    """A ``height x width`` float32 map, 0 outside ``box`` and ``crop_map`` (the crop's
    map on whatever grid it was read, covering the whole crop) inside it, resized once by
    the map's one resize (``map_geometry.frame_map``)."""
    return frame_map(crop_map, (height, width), box)


def same_size(crops: list[np.ndarray]) -> list[np.ndarray]:
    """References' crops brought to one size (the median of their sides, area-averaged
    or bilinear): a detector takes references of one size, and each crop is squeezed to
    the scorer's input anyway, so this moves no part's shape when the crops are square."""
    heights = sorted(c.shape[0] for c in crops)
    widths = sorted(c.shape[1] for c in crops)
    size = (widths[len(widths) // 2], heights[len(heights) // 2])
    return [
        c if c.shape[1::-1] == size else cv2.resize(c, size, interpolation=_interpolation(c, size))
        for c in crops
    ]


def _interpolation(image: np.ndarray, size: tuple[int, int]) -> int:
    return cv2.INTER_AREA if image.shape[1] >= size[0] else cv2.INTER_LINEAR
