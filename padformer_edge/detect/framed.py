"""A detector for camera frames: find the part, score its crop, paste the map back.

A profile made with a photo of its camera's empty belt (``profile create --background``)
scores frames, not parts: the part covers a share of the frame at a position that
changes, and the whole frame squeezed to the scorer's input reads the part at a fraction
of its pixels among cells that are mostly belt (docs/research.md#framed-quality). Each
frame is located first (``detect.locate`` with the belt model of that photo); a frame
with no part is a result of its own, never a score of the belt; a found part's square
crop (``detect.framing``), brought to the belt photo's light by the frame's belt
(``Located.light``) and with the belt around the part painted out, is what the
profile's own detector scores, and its map is pasted back
at the crop's box, so the heatmap has the frame's size. References are cut and relit the
same way when the detector is built (``framed_references``).

Numpy and OpenCV only here: the wrapped detector may be torch's or the line's.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from padformer_edge.detect.detection import Detection, InspectionDetector
from padformer_edge.detect.framing import (
    MARGIN,
    belt_out,
    crop,
    crop_box,
    paste,
    relight,
    same_size,
)
from padformer_edge.detect.locate import BeltModel, Located, locate
from padformer_edge.detect.wrapping import WrappedDetector
from padformer_edge.errors import UserError

LIGHT = "belt exposure"  # how a crop is brought to the photo's light (framing.relight)
SURROUND = "belt painted out"  # what the crop shows around the part (framing.belt_out)


def framing_signature(background_sha256: str, margin: float = MARGIN) -> dict[str, Any]:
    """What a framed profile's scoring signature adds (``detect.signature``): the belt
    photo the part is found against, the crop's margin, how its light is matched and
    what surrounds the part (a threshold set on crops read otherwise is not this
    profile's)."""
    return {"background": background_sha256, "margin": margin, "light": LIGHT,
            "surround": SURROUND}  # fmt: skip


@dataclass(frozen=True)
class Framing:
    """How a profile's frames are read: its belt and the crop's margin, and the sha256 of
    the belt photo, which a threshold's signature names (another belt, other crops)."""

    belt: BeltModel
    background_sha256: str
    margin: float = MARGIN

    @property
    def signature(self) -> dict[str, Any]:
        return framing_signature(self.background_sha256, self.margin)

    def cut(self, frame: np.ndarray) -> tuple[Located, tuple[int, int, int, int] | None]:
        """Where the part is in ``frame`` and the box its crop is cut at (None: no part)."""
        found = locate(frame, self.belt)
        if found.box is None:
            return found, None
        return found, crop_box(found.box, frame.shape[0], frame.shape[1], self.margin)

    def part(
        self, frame: np.ndarray
    ) -> tuple[Located, tuple[int, int, int, int] | None, np.ndarray | None]:
        """``cut`` and the crop the scorer reads (None: no part), under the belt photo's
        light and with the belt around the part painted out: what every frame and every
        reference goes through."""
        found, box = self.cut(frame)
        if box is None:
            return found, None, None
        part = relight(crop(frame, box), found.light)
        if found.part_mask is not None:
            colour = self.belt.mean.reshape(-1, 3).mean(axis=0)  # the photo's belt colour
            part = belt_out(part, box, found.part_mask, frame.shape, colour)
        return found, box, part


def framed_references(
    references: Sequence[np.ndarray], framing: Framing, names: Sequence[str] | None = None
) -> list[np.ndarray]:
    """Each reference's part crop, all of one size; a reference in which no part shows
    on this belt is refused with its name, since it would teach the scorer the belt."""
    crops = []
    for index, reference in enumerate(references):
        _, _, part = framing.part(reference)
        if part is None:
            name = names[index] if names else f"reference {index}"
            raise UserError(
                f"{name} shows no part against the belt photo; take the references on the "
                "camera's belt with the part in view, or give that camera's empty-belt photo."
            )
        crops.append(part)
    return same_size(crops)


def no_part(frame: np.ndarray, seconds: float) -> Detection:
    """The result of a frame with no part: no score (NaN), an empty map, ``no_part``."""
    empty = np.zeros(frame.shape[:2], dtype=np.float32)
    timings = {"prepare": 0.0, "reconstruct": 0.0, "score": 0.0, "locate": seconds}
    return Detection(float("nan"), empty, [], [], {**timings, "total": seconds}, no_part=True)


class FramedDetector(WrappedDetector):
    """``inner`` (built on the references' crops) applied to each frame's part crop."""

    def __init__(self, inner: InspectionDetector, framing: Framing) -> None:
        super().__init__(inner)
        self.framing = framing

    @property
    def scoring(self) -> dict[str, Any]:
        return {**self.inner.scoring, "framing": self.framing.signature}

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """Each frame's result: its crop's detection with the map in frame coordinates
        and ``part_box`` (the crop's box) and ``part_cut`` set, or ``no_part``."""
        cuts, spent = [], []
        for image in images:
            start = time.perf_counter()
            cuts.append(self.framing.part(image))
            spent.append(time.perf_counter() - start)
        crops = [part for _, _, part in cuts if part is not None]
        scored = iter(self.inner.detect(crops, reconstruction=reconstruction) if crops else [])
        results = []
        for image, (found, box, _), seconds in zip(images, cuts, spent, strict=True):
            if box is None:
                results.append(no_part(image, seconds))
                continue
            detection = next(scored)
            detection.anomaly_map = paste(detection.anomaly_map, box, *image.shape[:2])
            detection.timings["locate"] = seconds
            detection.timings["total"] = detection.timings.get("total", 0.0) + seconds
            detection.part_box, detection.part_cut = box, bool(found.cut)
            results.append(detection)
        return results
