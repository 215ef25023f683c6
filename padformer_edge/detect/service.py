"""``padformer-edge detect`` as a function: files in, scores and heatmap files out.

Every input is read and checked before the model runs, so a typo in the last file name
fails in a second rather than after the first hundred images were scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from padformer_edge.detect.detection import Detection
from padformer_edge.detect.heatmap import write_heatmap
from padformer_edge.detect.images import (
    IMAGE_SUFFIXES,
    check_rgb_array,
    list_images,
    read_image,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.log import get_logger

if TYPE_CHECKING:
    from padformer_edge.detect.detector import GraphRunner
    from padformer_edge.model.padformer import PADFormer


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


def detect_files(
    checkpoint: str | Path,
    references: str | Path,
    images: Sequence[str | Path],
    settings: DetectionSettings | None = None,
    out_dir: str | Path | None = None,
    save_raw: bool = False,
    heatmap_max: float | None = None,
    progress: Callable[[int, int], None] | None = None,
    *,
    open_graphs: Callable[[PADFormer], GraphRunner] | None = None,
    threshold: float | None = None,
) -> list[FileResult]:
    """Score ``images`` against the references with the checkpoint's model, run from the
    exported graphs ``open_graphs`` opens for it when the settings ask for onnxruntime or
    OpenVINO (the command passes ``deploy.runners.open_runner`` on its folder: this package
    cannot import the export package, which builds on it). ``progress`` hears (done,
    total) after each image. With ``threshold`` the heatmaps' colour scale is anchored to
    it and the region above it outlined, as the daemon draws a profile's heatmaps."""
    # torch: imported when a checkpoint runs, so a line install can name heatmaps
    from padformer_edge.detect.detector import Detector
    from padformer_edge.detect.paper_metrics import MIN_SIDE
    from padformer_edge.model.checkpoint import load_checkpoint

    if not images:
        raise UserError("no query images were given; name at least one image file to inspect.")
    paths = [Path(p) for p in images]
    queries = [read_image(path) for path in paths]
    for path, image in zip(paths, queries, strict=True):
        check_rgb_array(image, f"image {path}", MIN_SIDE)
    reference_images = load_references(references)
    model, _ = load_checkpoint(checkpoint)
    runner = None if open_graphs is None else open_graphs(model)
    detector = Detector(model, reference_images, settings, runner=runner)
    named = zip(paths, heatmap_names(paths), queries, strict=True)
    results = []
    for (path, name, _), image, detection in detector.detect_each(named, lambda x: x[2]):
        results.append(
            save_result(path, image, detection, name, out_dir, save_raw, heatmap_max, threshold)
        )
        if progress is not None:
            progress(len(results), len(paths))
    return results


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
        )
    seconds = detection.timings["total"]
    get_logger("detect").debug(
        "detect.file", path=str(path), score=detection.score, seconds=seconds
    )
    return FileResult(path, detection.score, seconds, heatmap, raw)
