"""The files around ``padformer-edge detect``: references read and checked, heatmap
names, a detection's heatmap written; ``methods.detect_files.detect_files`` runs a method over
them. Free of torch, so a line install can name and write heatmaps."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from padformer_edge.detect.detection import Detection
from padformer_edge.detect.heatmap import write_heatmap
from padformer_edge.detect.images import (
    IMAGE_SUFFIXES,
    list_images,
    read_image,
)
from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger


@dataclass(frozen=True)
class FileResult:
    """One scored file and where its heatmap (and raw map) went, if anywhere."""

    path: Path
    score: float
    seconds: float
    heatmap: Path | None = None
    raw_map: Path | None = None


def load_references(folder: str | Path) -> list[np.ndarray]:
    """Decode every image in ``folder``; they must all share one size."""
    paths = list_images(folder)
    if not paths:
        raise UserError(
            f"reference folder {folder} holds no images ({', '.join(IMAGE_SUFFIXES)}); put "
            "a few good images of the product there."
        )
    images = [read_image(path) for path in paths]
    height, width = images[0].shape[:2]
    for path, image in zip(paths, images, strict=True):
        if image.shape[:2] != (height, width):
            raise UserError(
                f"reference {path} is {image.shape[1]}x{image.shape[0]} pixels but "
                f"{paths[0].name} is {width}x{height}; use references from one camera setting."
            )
    return images


def heatmap_names(paths: Sequence[Path]) -> list[str]:
    """``<stem>.heatmap`` per input, with a counter where two inputs share a stem."""
    seen: dict[str, int] = {}
    names = []
    for path in paths:
        seen[path.stem] = seen.get(path.stem, 0) + 1
        suffix = "" if seen[path.stem] == 1 else f"-{seen[path.stem]}"
        names.append(f"{path.stem}{suffix}.heatmap")
    return names


def save_result(
    path: Path,
    image: np.ndarray,
    detection: Detection,
    name: str,
    out_dir: str | Path | None,
    save_raw: bool,
    heatmap_max: float | None,
    threshold: float | None = None,
) -> FileResult:
    """Write the heatmap files of one detection (when an output folder was given)."""
    heatmap = raw = None
    if out_dir is not None:
        heatmap = Path(out_dir) / f"{name}.png"
        raw = Path(out_dir) / f"{name}.npy" if save_raw else None
        write_heatmap(
            heatmap,
            image,
            detection.anomaly_map,
            detection.score,
            vmax=heatmap_max,
            threshold=threshold,
            raw_path=raw,
            ignored=detection.ignored_regions,
        )
    seconds = detection.timings["total"]
    get_logger("detect").debug(
        "detect.file", path=str(path), score=detection.score, seconds=seconds
    )
    return FileResult(path, detection.score, seconds, heatmap, raw)
