"""The result of detecting one image, and the interface every detector answers, in a
module without torch.

Every detector returns ``Detection``: the torch ``Detector`` (PADFormer's passes),
``methods.compare.detector.CompareDetector``, and the line's numpy ``LineDetector`` and
``LineCompareDetector``; they all answer ``InspectionDetector``, so the daemon, profiles,
calibration and the CLI handle detectors and results without importing the runtime or
the method that made them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np

if TYPE_CHECKING:  # plain data: naming the types loads nothing
    from padformer_edge.detect.settings import DetectionSettings

Item = TypeVar("Item")


@dataclass
class Detection:
    """The result for one query image.

    ``anomaly_map`` (float32, 0 where filtered out) covers the whole query on the grid
    it was read on: the query's own ``H x W`` for the metrics that read passes, the
    comparator's or the distance's cells, or the frame shrunk for a wide blur; its
    largest value in the frame is ``score``'s map's. Whatever shows or measures it in
    the frame resizes it once, through ``map_geometry.frame_map``;
    ``pass_mean_error`` / ``pass_max_error`` summarise each pass's raw error map;
    ``timings`` are seconds: ``prepare`` (tensor conversion and resize), ``reconstruct``
    (this query's share of the batched model calls), ``score`` and ``total``.
    ``reconstruction`` is the mean over passes of what the model drew (``S x S x 3``
    ``uint8`` at the model's size), kept only when asked for: evaluation reports show it.
    A framed profile (``detect.framed``) sets ``part_box`` (x0, y0, x1, y1 in frame
    pixels: the crop that was scored), ``part_cut`` (the part runs off the frame's edge,
    so only what is visible was scored) or ``no_part`` (the frame shows none: ``score``
    is NaN, never a score of the belt). ``ignored_regions``: the profile's polygons
    (``detect.regions``) whose cells the map and the score left out, for the heatmap.
    """

    score: float
    anomaly_map: np.ndarray
    pass_mean_error: list[float]
    pass_max_error: list[float]
    timings: dict[str, float] = field(default_factory=dict)
    reconstruction: np.ndarray | None = None
    part_box: tuple[int, int, int, int] | None = None
    part_cut: bool = False
    no_part: bool = False
    ignored_regions: tuple[np.ndarray, ...] = ()


def detect_in_groups(
    detect: Callable[..., list[Detection]],
    items: Iterable[Item],
    load: Callable[[Item], np.ndarray] | None,
    images_per_call: int,
    reconstruction: bool,
) -> Iterator[tuple[Item, np.ndarray, Detection]]:
    """``(item, image, detection)`` for every item, in order, ``images_per_call`` images
    per ``detect`` call: both runtimes' ``detect_each``.

    ``load`` turns an item (a path, an index) into its RGB image just before its group
    runs, so a long list is never held decoded at once; without it the items are the
    images. A group's images share the model calls, which does not change a query's
    result (every query gets the same masks).
    """
    remaining = iter(items)
    while group := list(islice(remaining, images_per_call)):
        images = [item if load is None else load(item) for item in group]  # type: ignore[misc]
        found = detect(images, reconstruction=reconstruction)
        yield from zip(group, images, found, strict=True)


def call_timings(prepare: float, model: float, score: float) -> dict[str, float]:
    """One image's ``Detection.timings``: its shares of the call's preparation and model
    work (``reconstruct``: the passes, or the comparator's graph) and its own scoring."""
    return {
        "prepare": prepare,
        "reconstruct": model,
        "score": score,
        "total": prepare + model + score,
    }


class GroupedDetection:
    """``detect_each`` for any detector with ``detect`` and ``images_per_call``: the torch
    ``Detector`` and both line detectors share this one loop."""

    images_per_call: int
    detect: Callable[..., list[Detection]]

    def detect_each(
        self,
        items: Iterable[Item],
        load: Callable[[Item], np.ndarray] | None = None,
        *,
        reconstruction: bool = False,
    ) -> Iterator[tuple[Item, np.ndarray, Detection]]:
        """``(item, image, detection)`` for every item, in order, one call's worth of
        images at a time (``detect_in_groups``)."""
        return detect_in_groups(self.detect, items, load, self.images_per_call, reconstruction)


class InspectionDetector(Protocol):
    """What a detector answers, whatever method scores and whatever runtime runs it.

    ``max_batch`` is writable: the daemon halves it after running out of GPU memory.
    ``device`` is where it runs (a ``torch.device``, or ``"cpu"``/``"cuda"`` for the
    exported graphs), for the daemon's gauges and log. ``scoring`` is the signature
    (``detect.signature``) a profile's threshold is checked against.
    """

    settings: DetectionSettings
    device: Any
    max_batch: int
    cache_hit: bool

    @property
    def scoring(self) -> dict[str, Any]: ...

    @property
    def images_per_call(self) -> int: ...

    def detect(
        self, images: Sequence[np.ndarray], *, reconstruction: bool = False
    ) -> list[Detection]: ...

    def detect_each(
        self,
        items: Iterable[Item],
        load: Callable[[Item], np.ndarray] | None = None,
        *,
        reconstruction: bool = False,
    ) -> Iterator[tuple[Item, np.ndarray, Detection]]: ...
