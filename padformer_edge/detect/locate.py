"""Find the part in a camera frame before it is scored: its box, "no part", or cut by the edge.

A line camera frames the belt, not the part, so a score over the whole frame reads nine
tenths belt. What the line has to tell part from belt is the belt itself: one photo of
the empty belt, or the references' borders (the part against the same belt). The belt
travels, so its seams and marks are never where the photo shows them; a pixel-by-pixel
difference to the photo lights them up. ``BeltModel`` therefore learns the belt's
colours (their mean and covariance, after the lamps' smooth shading is taken out) and
``locate`` marks the frame's pixels no belt colour explains, at a coarse working scale
where the belt's fine weave and the sensor's noise have averaged away. ``method="diff"``
keeps the pixel difference to the photo as the comparison a benchmark measures.

The belt is also the one thing in every frame whose colour is known: the pixels it
explains, against the photo's colour at the same places, give the light's drift since the
photo was taken (a lamp's ageing, the camera's exposure and white balance), per channel,
as ``Located.light`` (docs/research.md#framed-light).

Numpy and OpenCV only: the torch-free line install imports this module.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import cv2
import numpy as np

from padformer_edge.errors import UserError

METHODS = ("colour", "diff")
MIN_BELT_SHARE = 0.05  # the light is read from the belt when at least this share shows


@dataclass(frozen=True)
class LocateSettings:
    """How the frame is read; every length is a share of the frame or of the work image."""

    work_side: int = 320  # the frame is read at this many pixels along its longer side
    blur: float = 1.0  # Gaussian sigma in work pixels before the belt test
    factor: float = 1.5  # a pixel is part when its distance exceeds factor x the belt's tail
    tail: float = 0.999  # the belt's own quantile of distance that sets that tail
    floor: float = 3.0  # a distance threshold of at least this many belt deviations
    min_area: float = 0.002  # a part covers at least this share of the frame
    join: float = 0.03  # pieces this close (share of the longer side) are one part
    margin: float = 0.0  # box grown by this share of its size on each side
    fine: int = 4  # the box is redrawn at this many times the work scale (1: not redrawn)
    levels: float = 20.0  # method "diff": a change of more than this many 8-bit levels
    method: str = "colour"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UserError(
                f"locate method '{self.method}' is unknown; choose one of {', '.join(METHODS)}."
            )
        if not 32 <= self.work_side <= 4096:
            raise UserError(f"locate work side {self.work_side} is out of range; use 32-4096.")
        if not 1 <= self.fine <= 16:
            raise UserError(f"locate fine scale {self.fine} is out of range; use 1 to 16.")
        if not 0.0 <= self.margin <= 1.0:
            raise UserError(f"locate margin {self.margin:g} is out of range; use 0 to 1.")


@dataclass(frozen=True)
class BeltLight:
    """The belt's mean colour per channel at the work pixels the belt explains in one
    frame (``seen``) and in the belt model at the same pixels (``photo``): what the
    lamps, the exposure and the white balance did since the photo was taken."""

    seen: tuple[float, float, float]
    photo: tuple[float, float, float]

    @property
    def exposure(self) -> float:
        """One gain for every channel: the mean of the channels' ratios seen / photo."""
        return float(np.mean(np.divide(self.seen, self.photo)))


@dataclass(frozen=True)
class Located:
    """Where the part is: ``box`` (x0, y0, x1, y1 in frame pixels, x1 and y1 exclusive,
    margin included and clipped to the frame) or None for a frame with no part; ``cut``
    when the part runs off the frame's edge, so only what is visible can be scored;
    ``light``, the belt's colour in this frame against the photo's (None: no part, or too
    little belt to tell); ``part_mask``, the part's pixels at the work scale (those no
    belt colour explains, near the part's pieces), for painting the belt out of its crop."""

    box: tuple[int, int, int, int] | None
    cut: bool = False
    light: BeltLight | None = None
    part_mask: np.ndarray | None = field(default=None, compare=False, repr=False)

    @property
    def found(self) -> bool:
        return self.box is not None


def work_shape(height: int, width: int, side: int) -> tuple[int, int]:
    """(height, width) of the work image: the longer side ``side`` px, the aspect kept."""
    scale = side / max(height, width)
    return max(1, round(height * scale)), max(1, round(width * scale))


def _shrink(image: np.ndarray, shape: tuple[int, int], blur: float) -> np.ndarray:
    """The image at the work scale (area-averaged, so thin belt features fade), blurred."""
    small = cv2.resize(image, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
    small = small.astype(np.float32)
    return cv2.GaussianBlur(small, (0, 0), blur) if blur > 0 else small


SHADING_SIGMA_PX = 16.0
"""The shading blur is made on the image shrunk until its sigma is about this many pixels,
then brought back: a blur so wide keeps nothing a shrunk image loses. At the fine scale
(1280 px) the blur at full size cost 4.9 s of CPU per belt photo, every time a profile
was made, calibrated or loaded; shrunk, 5 ms, within 0.004 of a level of it."""


def _shading(small: np.ndarray) -> np.ndarray:
    """The lamps' smooth light across the image: a blur an eighth of the image wide."""
    sigma = max(small.shape[:2]) / 8
    shrink = max(1, int(sigma // SHADING_SIGMA_PX))
    if shrink == 1:
        return cv2.GaussianBlur(small, (0, 0), sigma, borderType=cv2.BORDER_REFLECT)
    height, width = small.shape[:2]
    size = (max(1, round(width / shrink)), max(1, round(height / shrink)))
    tiny = cv2.resize(small, size, interpolation=cv2.INTER_AREA)
    tiny = cv2.GaussianBlur(tiny, (0, 0), sigma / shrink, borderType=cv2.BORDER_REFLECT)
    return cv2.resize(tiny, (width, height), interpolation=cv2.INTER_LINEAR)


@dataclass(frozen=True)
class BeltModel:
    """What the line knows of its belt, at the work scale of one frame size."""

    settings: LocateSettings
    mean: np.ndarray  # (h, w, 3) float32 belt colour per work pixel, or (1, 1, 3) everywhere
    inverse: np.ndarray  # (3, 3) inverse covariance of the belt's colours about that mean
    threshold: float  # squared distance above which a pixel is not belt
    photo: np.ndarray | None  # the work-scale photo itself, for method "diff"
    fine: BeltModel | None = None  # the same belt at ``fine`` times the scale, for the box

    @classmethod
    def from_photo(cls, photo: np.ndarray, settings: LocateSettings | None = None) -> BeltModel:
        """The model of one camera's belt from a photo of it empty (RGB or BGR, as the
        frames will be: the model compares like with like)."""
        settings = settings or LocateSettings()
        coarse = cls._from_photo(photo, settings, settings.work_side)
        side = _fine_side(settings, photo.shape)
        if side is None:
            return coarse
        return replace(coarse, fine=cls._from_photo(photo, settings, side))

    @classmethod
    def from_references(
        cls, references: Sequence[np.ndarray], settings: LocateSettings | None = None
    ) -> BeltModel:
        """The model from the references alone: the colours of their outer band (a tenth
        of the shorter side), where the belt shows; the band's farthest twentieth, where
        a part reaches the border, is left out before the spread is measured."""
        settings = settings or LocateSettings()
        if not references:
            raise UserError("no reference frames to learn the belt from; add references.")
        coarse = cls._from_references(references, settings, settings.work_side)
        side = _fine_side(settings, references[0].shape)
        if side is None:
            return coarse
        return replace(coarse, fine=cls._from_references(references, settings, side))

    @classmethod
    def _from_photo(cls, photo: np.ndarray, settings: LocateSettings, side: int) -> BeltModel:
        shape = work_shape(photo.shape[0], photo.shape[1], side)
        small = _shrink(_colour(photo, "the belt photo"), shape, settings.blur)
        mean = _shading(small)
        return cls._fit(settings, mean, (small - mean).reshape(-1, 3), small)

    @classmethod
    def _from_references(
        cls, references: Sequence[np.ndarray], settings: LocateSettings, side: int
    ) -> BeltModel:
        pixels = []
        for reference in references:
            reference = _colour(reference, "a reference")
            shape = work_shape(reference.shape[0], reference.shape[1], side)
            small = _shrink(reference, shape, settings.blur)
            band = max(1, min(shape) // 10)
            border = np.ones(shape, dtype=bool)
            border[band:-band, band:-band] = False
            pixels.append(small[border])
        samples = np.concatenate(pixels)
        centre = np.median(samples, axis=0)
        spread = np.abs(samples - centre).sum(axis=1)
        kept = samples[spread <= np.quantile(spread, 0.95)]
        mean = kept.mean(axis=0).reshape(1, 1, 3).astype(np.float32)
        return cls._fit(settings, mean, kept - mean.reshape(1, 3), None)

    @classmethod
    def _fit(
        cls,
        settings: LocateSettings,
        mean: np.ndarray,
        residuals: np.ndarray,
        photo: np.ndarray | None,
    ) -> BeltModel:
        residuals = residuals - residuals.mean(axis=0)
        covariance = np.cov(residuals.T.astype(np.float64)) + np.eye(3)  # a level of noise
        inverse = np.linalg.inv(covariance).astype(np.float32)
        distances = _distance(residuals.astype(np.float32), inverse)
        tail = float(np.quantile(distances, settings.tail))
        threshold = max(settings.factor**2 * tail, settings.floor**2)
        return cls(settings, mean.astype(np.float32), inverse, threshold, photo)


def _fine_side(settings: LocateSettings, shape: tuple[int, ...]) -> int | None:
    """The fine pass's longer side, at most the frame's own; None when there is none."""
    side = min(settings.work_side * settings.fine, max(shape[:2]))
    return side if settings.fine > 1 and side > settings.work_side else None


def _colour(image: np.ndarray, what: str) -> np.ndarray:
    if image.ndim != 3 or image.shape[2] != 3:
        raise UserError(f"{what} is not a colour image; the part is found in 3-channel frames.")
    return image


def foreground(frame: np.ndarray, belt: BeltModel) -> tuple[np.ndarray, np.ndarray]:
    """Work-scale mask of the pixels the belt does not explain, and this frame's light:
    the median change of the frame's colours from the belt's, per channel."""
    return _foreground(_work_image(frame, belt), belt)


def _work_image(frame: np.ndarray, belt: BeltModel) -> np.ndarray:
    """The frame at the belt model's work scale, refused when the model is another size's."""
    settings = belt.settings
    shape = work_shape(frame.shape[0], frame.shape[1], settings.work_side)
    small = _shrink(_colour(frame, "the frame"), shape, settings.blur)
    if belt.mean.shape[0] > 1 and belt.mean.shape[:2] != shape:
        raise UserError(
            f"the belt photo is {belt.mean.shape[1]}x{belt.mean.shape[0]} at work scale but "
            f"the frame is {shape[1]}x{shape[0]}; photograph the belt with the camera's own "
            "frame size."
        )
    return small


def _foreground(small: np.ndarray, belt: BeltModel) -> tuple[np.ndarray, np.ndarray]:
    settings = belt.settings
    if settings.method == "diff":
        if belt.photo is None:
            raise UserError("locate method 'diff' needs a belt photo; give the empty belt's.")
        change = small - belt.photo
        light = np.median(change.reshape(-1, 3), axis=0)
        return np.abs(change - light).max(axis=2) > settings.levels, light
    residual = small - belt.mean
    light = np.median(residual.reshape(-1, 3), axis=0)
    return _not_belt(residual - light, belt), light


def belt_light(small: np.ndarray, mask: np.ndarray, belt: BeltModel) -> BeltLight | None:
    """The belt's colour in this frame and in the model, over the work pixels that are
    belt (the foreground grown by two pixels left out, so the part's blurred rim does not
    count); None where too little belt shows to say (a part filling the frame)."""
    grown = cv2.dilate(mask.astype(np.uint8), np.ones((5, 5), np.uint8)).astype(bool)
    shown = ~grown
    if shown.sum() < MIN_BELT_SHARE * shown.size:
        return None
    photo = np.broadcast_to(belt.mean, small.shape)[shown].mean(axis=0)
    seen = np.maximum(small[shown].mean(axis=0), 1.0)  # a black frame has no light to read
    return BeltLight(
        (float(seen[0]), float(seen[1]), float(seen[2])),
        (float(photo[0]), float(photo[1]), float(photo[2])),
    )


def _not_belt(residual: np.ndarray, belt: BeltModel) -> np.ndarray:
    flat = _distance(residual.reshape(-1, 3), belt.inverse)
    return flat.reshape(residual.shape[:2]) > belt.threshold


def _distance(residuals: np.ndarray, inverse: np.ndarray) -> np.ndarray:
    """Squared Mahalanobis distance of each row (a matrix product: cheaper than einsum)."""
    return ((residuals @ inverse) * residuals).sum(axis=1)


def locate(frame: np.ndarray, belt: BeltModel) -> Located:
    """The part's box in ``frame`` (same channel order as the belt model's), or no part.

    The foreground is opened (a belt's seam or scuff one work pixel thin goes), pieces
    smaller than ``min_area`` are dropped, the largest piece is the part and every piece
    within ``join`` of it joins it (a part whose middle matches the belt still comes
    whole). The box is taken from the unopened foreground near the chosen pieces, so a
    thin arm of the part opened away still counts, and redrawn by the fine pass."""
    settings = belt.settings
    small = _work_image(frame, belt)
    mask, light = _foreground(small, belt)
    shape = mask.shape
    opened = cv2.morphologyEx(mask.astype(np.uint8), cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    count, labels, stats, _ = cv2.connectedComponentsWithStats(opened, connectivity=8)
    least = settings.min_area * shape[0] * shape[1]
    pieces = [i for i in range(1, count) if stats[i, cv2.CC_STAT_AREA] >= least]
    if not pieces:
        return Located(None)
    pieces.sort(key=lambda i: -stats[i, cv2.CC_STAT_AREA])
    gap = settings.join * max(shape)
    box = _stat_box(stats[pieces[0]])
    chosen = [pieces[0]]
    grown = True
    while grown:
        grown = False
        for piece in pieces:
            if piece not in chosen and _gap(box, _stat_box(stats[piece])) <= gap:
                chosen.append(piece)
                box = _union(box, _stat_box(stats[piece]))
                grown = True
    reach = cv2.dilate(np.isin(labels, chosen).astype(np.uint8), np.ones((5, 5), np.uint8))
    part_mask = mask & reach.astype(bool)
    rows, cols = np.nonzero(part_mask)
    height, width = frame.shape[:2]
    sy, sx = height / shape[0], width / shape[1]
    work_box = (cols.min(), rows.min(), cols.max() + 1, rows.max() + 1)
    cut = work_box[0] <= 0 or work_box[1] <= 0 or work_box[2] >= shape[1]
    cut = cut or work_box[3] >= shape[0]
    found = (work_box[0] * sx, work_box[1] * sy, work_box[2] * sx, work_box[3] * sy)
    if belt.fine is not None and settings.method == "colour":
        found = _refine(frame, belt.fine, found, reach.astype(bool), light) or found
    located = _in_frame(found, cut, frame, settings)
    return replace(located, light=belt_light(small, mask, belt), part_mask=part_mask)


def _refine(
    frame: np.ndarray,
    fine: BeltModel,
    box: tuple[float, float, float, float],
    reach: np.ndarray,
    light: np.ndarray,
) -> tuple[float, float, float, float] | None:
    """The box redrawn from the fine model's foreground in a crop two work pixels wider
    than the coarse box, kept to the coarse pieces' reach; None when nothing shows."""
    height, width = frame.shape[:2]
    pad_y, pad_x = 2 * height / reach.shape[0], 2 * width / reach.shape[1]
    x0, y0 = max(0, int(box[0] - pad_x)), max(0, int(box[1] - pad_y))
    x1, y1 = min(width, int(np.ceil(box[2] + pad_x))), min(height, int(np.ceil(box[3] + pad_y)))
    side = work_shape(height, width, _fine_side(fine.settings, frame.shape) or max(height, width))
    fy, fx = side[0] / height, side[1] / width
    crop_shape = (max(1, round((y1 - y0) * fy)), max(1, round((x1 - x0) * fx)))
    small = _shrink(frame[y0:y1, x0:x1], crop_shape, fine.settings.blur)
    mean = fine.mean
    if mean.shape[0] > 1:
        rows = slice(int(y0 * fy), max(int(y0 * fy) + 1, int(np.ceil(y1 * fy))))
        cols = slice(int(x0 * fx), max(int(x0 * fx) + 1, int(np.ceil(x1 * fx))))
        mean = cv2.resize(mean[rows, cols], (crop_shape[1], crop_shape[0]))
    mask = _not_belt(small - mean - light, fine).astype(np.uint8)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    near = cv2.resize(
        reach[
            int(y0 * reach.shape[0] / height) : int(np.ceil(y1 * reach.shape[0] / height)),
            int(x0 * reach.shape[1] / width) : int(np.ceil(x1 * reach.shape[1] / width)),
        ].astype(np.uint8),
        (crop_shape[1], crop_shape[0]),
        interpolation=cv2.INTER_NEAREST,
    )
    rows_f, cols_f = np.nonzero(mask & near)
    if not len(rows_f):
        return None
    sx, sy = (x1 - x0) / crop_shape[1], (y1 - y0) / crop_shape[0]
    return (
        x0 + cols_f.min() * sx,
        y0 + rows_f.min() * sy,
        x0 + (cols_f.max() + 1) * sx,
        y0 + (rows_f.max() + 1) * sy,
    )


def _stat_box(stat: np.ndarray) -> tuple[int, int, int, int]:
    x, y = int(stat[cv2.CC_STAT_LEFT]), int(stat[cv2.CC_STAT_TOP])
    return x, y, x + int(stat[cv2.CC_STAT_WIDTH]), y + int(stat[cv2.CC_STAT_HEIGHT])


def _gap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    dx = max(0, max(a[0], b[0]) - min(a[2], b[2]))
    dy = max(0, max(a[1], b[1]) - min(a[3], b[3]))
    return float(np.hypot(dx, dy))


def _union(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> tuple[int, int, int, int]:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def _in_frame(
    box: tuple[float, float, float, float],
    cut: bool,
    frame: np.ndarray,
    settings: LocateSettings,
) -> Located:
    """A box in frame pixels grown by the margin, rounded outwards, clipped to the frame."""
    height, width = frame.shape[:2]
    x0, y0, x1, y1 = box
    grow_x, grow_y = settings.margin * (x1 - x0), settings.margin * (y1 - y0)
    framed = (
        max(0, int(np.floor(x0 - grow_x))),
        max(0, int(np.floor(y0 - grow_y))),
        min(width, int(np.ceil(x1 + grow_x))),
        min(height, int(np.ceil(y1 + grow_y))),
    )
    return Located(framed, cut)


def box_iou(a: Sequence[int], b: Sequence[int]) -> float:
    """Intersection over union of two boxes (x0, y0, x1, y1; x1 and y1 exclusive)."""
    width = max(0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union else 0.0
