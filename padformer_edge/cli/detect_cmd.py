"""``padformer-edge detect``: score image files against good references, write heatmaps."""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from padformer_edge.anomaly import is_anomalous
from padformer_edge.cli import detection_options as options
from padformer_edge.cli.checks import require_file, require_folder
from padformer_edge.cli.output import echo_json, table_console
from padformer_edge.cli.progress import job_progress
from padformer_edge.detect.settings import DetectionSettings
from padformer_edge.errors import UserError
from padformer_edge.images.decode import IMAGE_SUFFIXES
from padformer_edge.weights import resolve_model

if TYPE_CHECKING:
    from padformer_edge.detect.service import FileResult
    from padformer_edge.methods.interface import GraphOpener

EXPORT_FORMAT = {"onnxruntime": "onnx", "openvino": "openvino"}
"""The ``export --format`` each exported-graph runtime reads."""


def default_export_folder(checkpoint: Path, runtime: str) -> Path:
    """Where ``--runtime onnxruntime|openvino`` looks without ``--exported``: beside the
    checkpoint (``<stem>-onnx`` or ``<stem>-openvino``), so a model and its graphs travel
    together."""
    return checkpoint.with_name(f"{checkpoint.stem}-{EXPORT_FORMAT[runtime]}")


def export_hint(checkpoint: Path, folder: Path, runtime: str) -> str:
    """The fix for a missing graph folder: the command that writes it."""
    fmt = EXPORT_FORMAT[runtime]
    return f"run padformer-edge export {checkpoint} --format {fmt} --out {folder} first"


def expand_images(paths: list[Path]) -> list[Path]:
    """Image files as given, and a folder as the images directly inside it (sorted), so a
    whole camera folder can be scored with one argument; each path is checked here,
    before torch loads."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(
                p for p in path.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES
            )
            if not found:
                raise UserError(
                    f"folder {path} holds no images ({', '.join(IMAGE_SUFFIXES)}); "
                    "name image files or a folder of them."
                )
            files.extend(found)
        else:
            require_file(path, "image", "check the path")
            files.append(path)
    return files


@options.with_detection_options()
def detect(
    images: list[Path] = typer.Argument(
        ..., metavar="IMAGE", help="Image files, or folders of them, to inspect."
    ),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Checkpoint (.safetensors); default: the shipped generic model."
    ),
    references: Path = typer.Option(
        ..., "--references", "-r", help="Folder of good images of the product, one size."
    ),
    settings: DetectionSettings = options.FROM_OPTIONS,
    exported: Path | None = typer.Option(
        None,
        "--exported",
        help="Folder of graphs from padformer-edge export (--runtime onnxruntime or "
        "openvino); default: <checkpoint stem>-onnx or -openvino beside the checkpoint.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for heatmap PNGs."),
    raw: bool = typer.Option(False, "--raw", help="Also write each float32 map as .npy."),
    heatmap_max: float | None = typer.Option(
        None,
        "--heatmap-max",
        help="Map value drawn as full red (default: each map's max, or twice "
        "--threshold when given).",
    ),
    threshold: float | None = typer.Option(
        None,
        "--threshold",
        "-t",
        help="Score above which an image is anomalous (a profile's calibrated threshold); "
        "adds a verdict and the exit status 1, anchors the heatmaps' colours to it and "
        "outlines the region above it.",
    ),
    no_fail: bool = typer.Option(
        False, "--no-fail", help="Exit 0 even when an image is anomalous."
    ),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per image."),
) -> None:
    """Score each IMAGE against the references; print file, score and time per image.

    With --threshold, each image gets a verdict and the command exits 1 when any image is
    anomalous (unless --no-fail): a script or a CI job can gate on the status."""
    check_heatmap_scale(out, threshold, heatmap_max)
    # Then the files, before torch loads and before the shipped model is hashed: a
    # mistyped path is refused at once.
    require_folder(references, "reference folder", "pass a folder of good images of the product")
    files = expand_images(images)
    model = resolve_model(model)
    require_file(model, "checkpoint", "give the path of a .safetensors file")
    open_graphs = graph_opener(settings, model, exported)
    from padformer_edge.methods.detect_files import detect_files  # torch: load late

    with job_progress("detecting", console=Console(stderr=True)) as progress:
        results = detect_files(
            model,
            references,
            files,
            settings,
            out,
            raw,
            heatmap_max,
            progress.update,
            open_graphs=open_graphs,
            threshold=threshold,
        )
    verdicts = [None if threshold is None else is_anomalous(r.score, threshold) for r in results]
    if as_json:
        echo_json(result_rows(results, verdicts))
    else:
        print_results(results, verdicts, judged=threshold is not None, heatmaps=out is not None)
    if any(verdicts) and not no_fail:
        raise typer.Exit(1)


def check_heatmap_scale(
    out: Path | None, threshold: float | None, heatmap_max: float | None
) -> None:
    """The heatmaps' colour scale is anchored to the threshold: refuse a scale that cannot
    be drawn now rather than after the model has scored every image."""
    if out is None or threshold is None:
        return
    if threshold <= 0:
        raise UserError(f"--threshold {threshold:g} must be positive to colour heatmaps.")
    if heatmap_max is not None and heatmap_max <= threshold:
        raise UserError(f"--heatmap-max {heatmap_max:g} must lie above --threshold {threshold:g}.")


def graph_opener(
    settings: DetectionSettings, model: Path, exported: Path | None
) -> GraphOpener | None:
    """The runner opener for ``--runtime onnxruntime|openvino`` on the checked graph folder
    (``None`` with torch), opened later on the model ``detect_files`` loads; the folder is
    checked here, before torch loads."""
    runtime = settings.runtime
    if exported is not None and runtime == "torch":
        raise UserError(
            "--exported is read only with --runtime onnxruntime or openvino; add one or drop it."
        )
    if runtime == "torch":
        return None
    exported = exported if exported is not None else default_export_folder(model, runtime)
    require_folder(exported, "exported graph folder", export_hint(model, exported, runtime))
    from padformer_edge.deploy.runners import open_runner

    return partial(open_runner, runtime=runtime, exported=exported, device=settings.device)


def result_rows(results: Sequence[FileResult], verdicts: list[bool | None]) -> list[dict]:
    """``--json``: one object per image."""
    return [
        {
            "file": str(result.path),
            "score": result.score,
            "anomalous": verdict,
            "seconds": result.seconds,
            "heatmap": str(result.heatmap) if result.heatmap else None,
            "raw_map": str(result.raw_map) if result.raw_map else None,
        }
        for result, verdict in zip(results, verdicts, strict=True)
    ]


def print_results(
    results: Sequence[FileResult], verdicts: list[bool | None], *, judged: bool, heatmaps: bool
) -> None:
    """The table: file, score, the verdict when a threshold judged it, time, the heatmap."""
    headers = ["file", "score", *(["verdict"] if judged else []), "time (s)"]
    table = Table(*headers, *(["heatmap"] if heatmaps else []))
    for result, verdict in zip(results, verdicts, strict=True):
        row = [str(result.path), f"{result.score:.4g}"]
        row += ["[red]ANOMALY[/]" if verdict else "[green]good[/]"] if judged else []
        row += [f"{result.seconds:.3f}", *([str(result.heatmap)] if heatmaps else [])]
        table.add_row(*row)
    table_console().print(table)
