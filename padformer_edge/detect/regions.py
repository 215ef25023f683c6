"""Regions of the frame the score ignores: a fixture, a label on the belt, a date stamp.

A profile may name polygons in frame pixels (``ignore_regions`` in ``profile.yaml``) that
no verdict should hang on: whatever lies there differs from the references by design. The
wrapper here runs any detector (torch's, the line's, a framed one) and then, on the map
it returned, sets every cell the regions touch to the lowest value of the rest, and takes
the score as the largest value of what remains in the frame (``map_geometry.frame_max``).
So the one rule holds for every method and runtime without any of them knowing of
regions, and a threshold set without the regions is never reused with them (the regions
are part of the scoring signature).

The map arrives on the grid it was read on (cells, or the frame for a framed profile's
pasted crop), covering the whole frame. A frame pixel on that grid's map is a bilinear
blend of the four nearest cells, so a cell is hidden when the polygon, drawn on the grid,
touches it or one of its neighbours: no pixel inside a region reads a cell outside it,
and a region costs at most one cell of border around it. The cells just outside still
see a little of what lies inside (a network's cell reads beyond its own pixels), so a
region is drawn with a margin around what it hides (docs/products.md).

Numpy and OpenCV only: the torch-free line install reads regions too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from padformer_edge.detect.detection import Detection, InspectionDetector
from padformer_edge.detect.map_geometry import frame_max
from padformer_edge.detect.wrapping import WrappedDetector

Polygon = np.ndarray
"""``[n, 2]`` float32 corners ``(x, y)`` in frame pixels."""

SUBPIXEL_BITS = 4  # OpenCV's fixed-point corners: 1/16 of a grid cell


def hidden_cells(
    polygons: Sequence[Polygon], frame_size: tuple[int, int], grid: tuple[int, int]
) -> np.ndarray:
    """A ``bool`` mask of ``grid`` (a map's ``(rows, cols)`` covering a frame of
    ``(height, width)`` ``frame_size``): the cells whose values reach a frame pixel
    inside one of ``polygons``."""
    rows, cols = grid
    scale = np.array([cols / frame_size[1], rows / frame_size[0]], dtype=np.float64)
    drawn = np.zeros(grid, dtype=np.uint8)
    for polygon in polygons:
        # corners at pixel edges in frame units, so -0.5 puts them on the grid's centres
        corners = (np.asarray(polygon, np.float64) * scale - 0.5) * (1 << SUBPIXEL_BITS)
        points = np.round(corners).astype(np.int32).reshape(-1, 1, 2)
        cv2.fillPoly(drawn, [points], 1, lineType=cv2.LINE_8, shift=SUBPIXEL_BITS)
        cv2.polylines(drawn, [points], True, 1, lineType=cv2.LINE_8, shift=SUBPIXEL_BITS)
    if grid != tuple(frame_size):  # a coarser grid: a pixel blends its neighbouring cells
        drawn = cv2.dilate(drawn, np.ones((3, 3), np.uint8))
    return drawn.astype(bool)


def without_regions(
    detection: Detection, polygons: Sequence[Polygon], frame_size: tuple[int, int]
) -> None:
    """``detection``'s map with the regions' cells at the lowest value of the rest and
    its score the largest value of that map in the frame, in place; a frame without a
    part has no score to change."""
    detection.ignored_regions = tuple(polygons)
    if detection.no_part:
        return
    values = np.asarray(detection.anomaly_map, dtype=np.float32)
    hidden = hidden_cells(polygons, frame_size, values.shape)
    if hidden.all():  # a frame smaller than the references': nothing left to score
        detection.anomaly_map = np.zeros_like(values)
        detection.score = 0.0
        return
    floor = values[~hidden].min()
    detection.anomaly_map = np.where(hidden, floor, values).astype(np.float32)
    detection.score = frame_max(detection.anomaly_map, frame_size)


@dataclass(frozen=True)
class IgnoredRegions:
    """A profile's regions to ignore, as every reader of them takes them: the names, the
    float32 corners the map and the heatmap use, and the scoring signature's record of
    both, made from those same corners so the detector's signature and the one a
    calibration records (``profiles.calibrate.scoring_of``) cannot drift apart."""

    names: tuple[str, ...]
    polygons: tuple[Polygon, ...]

    @classmethod
    def of(cls, names: Sequence[str], corners: Sequence[Any]) -> IgnoredRegions:
        """From names and corner lists (``[[x, y], ...]`` each, in frame pixels)."""
        polygons = tuple(np.asarray(c, np.float32).reshape(-1, 2) for c in corners)
        return cls(tuple(names), polygons)

    @property
    def signature(self) -> list[dict[str, Any]]:
        """What a scoring signature (``detect.signature``) records of the regions: their
        names and corners, so a threshold set with other regions (or none) is refused."""
        return [
            {"name": name, "points": np.asarray(polygon, np.float64).round(3).tolist()}
            for name, polygon in zip(self.names, self.polygons, strict=True)
        ]


class RegionsDetector(WrappedDetector):
    """``inner``'s detections with ``regions`` ignored."""

    def __init__(self, inner: InspectionDetector, regions: IgnoredRegions) -> None:
        super().__init__(inner)
        self.regions = regions

    @property
    def scoring(self) -> dict[str, Any]:
        return {**self.inner.scoring, "ignore_regions": self.regions.signature}

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]:
        """``inner``'s detections of ``images``, each with the regions ignored."""
        found = self.inner.detect(images, reconstruction=reconstruction)
        for image, detection in zip(images, found, strict=True):
            without_regions(detection, self.regions.polygons, image.shape[:2])
        return found
