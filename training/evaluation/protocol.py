"""The evaluation protocol: which images are scored against which references, and the
per-class, per-defect and mean metrics of the result.

Test images are taken in the dataset's stable order; ``max_per_label`` keeps the first K
of each (class, label) so a quick run still sees every defect type and good views in a
fixed proportion, chosen without looking at any score. Maps are compared with ground
truth at most ``map_size`` pixels on their long side (bilinear for maps, nearest for
masks): full-resolution MVTec-AD maps would need gigabytes, and the published numbers are
computed at similar sizes.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from padformer_edge.detect.images import read_image
from padformer_edge.detect.map_geometry import frame_map
from padformer_edge.errors import UserError
from padformer_edge_training.data.layouts import DatasetIndex, ImageRecord
from padformer_edge_training.evaluation.metrics import aupro, image_auroc, pixel_auroc
from padformer_edge_training.evaluation.references import ReferencePicker
from padformer_edge_training.evaluation.scorers import Scorer

METRICS = ("image_auroc", "pixel_auroc", "aupro")
THUMBNAIL = 128


@dataclass(frozen=True)
class EvalOptions:
    shots: int = 4
    strategy: str = "random"
    seed: int = 0
    max_per_label: int | None = None
    map_size: int = 256
    batch_size: int = 8


@dataclass
class Episode:
    """Test images of one class that share one reference set."""

    category: str
    references: tuple[Path, ...]
    tests: list[ImageRecord] = field(default_factory=list)


@dataclass
class ImageResult:
    record: ImageRecord
    score: float
    anomaly_map: np.ndarray  # at most map_size on the long side
    mask: np.ndarray  # bool, same size as anomaly_map
    thumbnails: dict[str, np.ndarray]  # query / comparison / map (raw float) / mask


def plan_episodes(index: DatasetIndex, options: EvalOptions) -> list[Episode]:
    """Group the test images by class and reference set, in the dataset's order."""
    picker = ReferencePicker(index.good_train(), options.shots, options.strategy, options.seed)
    kept: dict[tuple[str, str], int] = defaultdict(int)
    episodes: dict[tuple[str, tuple[Path, ...]], Episode] = {}
    for record in index.records:
        if record.split != "test" or record.category not in picker.good_train:
            continue
        if options.max_per_label is not None:
            if kept[record.category, record.label] >= options.max_per_label:
                continue
            kept[record.category, record.label] += 1
        if not record.is_good and record.mask is None:
            raise UserError(
                f"defective test image {record.path} has no ground-truth mask; "
                "add it under ground_truth/ or remove the image."
            )
        refs = tuple(picker.pick(record))
        episode = episodes.setdefault((record.category, refs), Episode(record.category, refs))
        episode.tests.append(record)
    if not episodes:
        raise UserError(
            f"no test images found in {index.root}; evaluation needs CLASS/test/LABEL folders."
        )
    return list(episodes.values())


def long_side_shape(image: np.ndarray, size: int) -> tuple[int, int]:
    """(height, width) of ``image`` shrunk so its longer side is at most ``size``."""
    height, width = image.shape[:2]
    scale = size / max(height, width)
    if scale >= 1:
        return height, width
    return max(1, round(height * scale)), max(1, round(width * scale))


def fit_long_side(image: np.ndarray, size: int, nearest: bool = False) -> np.ndarray:
    target = long_side_shape(image, size)
    if target == image.shape[:2]:
        return image
    interpolation = cv2.INTER_NEAREST if nearest else cv2.INTER_AREA
    return cv2.resize(image, target[::-1], interpolation=interpolation)


def map_at(
    anomaly_map: np.ndarray, frame_size: tuple[int, int], shape: tuple[int, int]
) -> np.ndarray:
    """A detection's map (on the grid it was read on) at ``shape``, resized once: area
    averaged where it was read at least that finely (a map at the frame's size), else
    brought up by the shared bilinear resize (``map_geometry.frame_map``)."""
    values = anomaly_map.astype(np.float32, copy=False)
    if values.shape == tuple(shape):
        return values
    if values.shape[0] >= shape[0] and values.shape[1] >= shape[1]:
        return cv2.resize(values, (shape[1], shape[0]), interpolation=cv2.INTER_AREA)
    return frame_map(values, frame_size, size=shape)


def read_mask(record: ImageRecord, shape: tuple[int, int]) -> np.ndarray:
    if record.mask is None:
        return np.zeros(shape, dtype=bool)
    mask = cv2.imread(str(record.mask), cv2.IMREAD_GRAYSCALE)
    if mask is None:
        raise UserError(f"mask {record.mask} cannot be decoded; replace it.")
    if mask.shape != shape:
        mask = cv2.resize(mask, (shape[1], shape[0]), interpolation=cv2.INTER_NEAREST)
    return mask > 127


def run_scorer(
    scorer: Scorer,
    episodes: Sequence[Episode],
    options: EvalOptions,
    progress: Callable[[int], None] | None = None,
) -> tuple[list[ImageResult], float]:
    """Score every test image; returns the results and CPU seconds per image."""
    results, cpu = [], 0.0
    for episode in episodes:
        references = [read_image(p) for p in episode.references]
        start = time.process_time()
        scorer.prepare(references)
        cpu += time.process_time() - start
        for first in range(0, len(episode.tests), options.batch_size):
            records = episode.tests[first : first + options.batch_size]
            queries = [read_image(r.path) for r in records]
            start = time.process_time()
            scored = scorer.score(queries)
            cpu += time.process_time() - start
            for record, query, item in zip(records, queries, scored, strict=True):
                mask = read_mask(record, query.shape[:2])
                frame_size = query.shape[:2]
                small_mask = fit_long_side(mask.astype(np.uint8), options.map_size, True) > 0
                # the detection's map, on the grid it was read on, resized once to each size
                amap = map_at(item.anomaly_map, frame_size, small_mask.shape)
                thumbs = {
                    "query": fit_long_side(query, THUMBNAIL),
                    "map": map_at(item.anomaly_map, frame_size, long_side_shape(query, THUMBNAIL)),
                    "mask": fit_long_side(mask.astype(np.uint8), THUMBNAIL, True) > 0,
                }
                if item.comparison is not None:
                    thumbs["comparison"] = fit_long_side(item.comparison, THUMBNAIL)
                results.append(ImageResult(record, item.score, amap, small_mask, thumbs))
            if progress is not None:
                progress(len(records))
    return results, cpu / max(1, len(results))


def nan_to_none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), 6)


def metrics_of(results: Sequence[ImageResult]) -> dict[str, float | None]:
    labels = [not r.record.is_good for r in results]
    return {
        "image_auroc": nan_to_none(image_auroc(labels, [r.score for r in results])),
        "pixel_auroc": nan_to_none(
            pixel_auroc([r.mask for r in results], [r.anomaly_map for r in results])
        ),
        "aupro": nan_to_none(aupro([r.mask for r in results], [r.anomaly_map for r in results])),
        "images": len(results),
    }


def mean_of(rows: Sequence[dict]) -> dict[str, float | None]:
    """Mean over classes, ignoring classes where a metric is undefined."""
    mean: dict[str, float | None] = {}
    for name in METRICS:
        values = [row[name] for row in rows if row[name] is not None]
        mean[name] = round(float(np.mean(values)), 6) if values else None
    mean["images"] = sum(row["images"] for row in rows)
    return mean


def summarise(results: Sequence[ImageResult], per_defect: bool = True) -> dict:
    """Per class (with per defect type: that type against the class's good images) and
    the mean over classes, the way MVTec-AD and MAD-Sim tables report it. A sweep that
    only reads the mean skips the per-type rows (``per_defect=False``): they are more
    than half of the work and do not enter the mean."""
    by_class: dict[str, list[ImageResult]] = defaultdict(list)
    for result in results:
        by_class[result.record.category].append(result)
    classes = {}
    for category, items in by_class.items():
        good = [r for r in items if r.record.is_good]
        defects = sorted({r.record.label for r in items if not r.record.is_good})
        row = metrics_of(items)
        row["defects"] = {
            label: metrics_of(good + [r for r in items if r.record.label == label])
            for label in (defects if per_defect else [])
        }
        classes[category] = row
    return {"classes": classes, "mean": mean_of(list(classes.values()))}
