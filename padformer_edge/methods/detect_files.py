"""``padformer-edge detect`` as a function: files in, scores and heatmap files out,
scored by the method the settings name (``registry.method_for``).

Every input is read and checked before a model loads, so a typo in the last file name
fails in a second rather than after the first hundred images were scored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from padformer_edge.detect.images import check_rgb_array, read_image
from padformer_edge.detect.readout_constants import MIN_SIDE
from padformer_edge.detect.service import (
    FileResult,
    heatmap_names,
    load_references,
    save_result,
)
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.methods.interface import GraphOpener
from padformer_edge.methods.registry import method_for


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
    open_graphs: GraphOpener | None = None,
    threshold: float | None = None,
) -> list[FileResult]:
    """Score ``images`` against the references with the method of ``settings``: a
    PADFormer metric with the checkpoint's model, run from the exported graphs
    ``open_graphs`` opens for it when the settings ask for onnxruntime or OpenVINO (the
    command passes ``deploy.runners.open_runner`` on its folder); ``compare`` reads the
    comparator and leaves the checkpoint unread. ``progress`` hears (done, total) after
    each image. With ``threshold`` the heatmaps' colour scale is anchored to it and the
    region above it outlined, as the daemon draws a profile's heatmaps."""
    from padformer_edge.model.checkpoint import load_checkpoint

    settings = DetectionSettings() if settings is None else settings
    if not images:
        raise UserError("no query images were given; name at least one image file to inspect.")
    paths = [Path(p) for p in images]
    queries = [read_image(path) for path in paths]
    for path, image in zip(paths, queries, strict=True):
        check_rgb_array(image, f"image {path}", MIN_SIDE)
    reference_images = load_references(references)
    detector = method_for(settings.metric).torch_detector(
        reference_images,
        settings,
        lambda: load_checkpoint(checkpoint)[0],
        open_graphs=open_graphs,
    )
    named = zip(paths, heatmap_names(paths), queries, strict=True)
    results = []
    for (path, name, _), image, detection in detector.detect_each(named, lambda x: x[2]):
        results.append(
            save_result(path, image, detection, name, out_dir, save_raw, heatmap_max, threshold)
        )
        if progress is not None:
            progress(len(results), len(paths))
    return results
