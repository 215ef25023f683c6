"""``padformer-edge detect``: score image files against good references, write heatmaps."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from padformer_edge.cli import detection_options as options
from padformer_edge.cli.checks import require_file, require_folder
from padformer_edge.errors import UserError
from padformer_edge.models import resolve_model


def default_export_folder(checkpoint: Path) -> Path:
    """Where ``--runtime onnxruntime`` looks without ``--exported``: beside the checkpoint,
    so a model and its graphs travel together."""
    return checkpoint.with_name(f"{checkpoint.stem}-onnx")


def export_hint(checkpoint: Path, folder: Path) -> str:
    """The fix for a missing graph folder: the command that writes it."""
    return f"run padformer-edge export {checkpoint} --format onnx --out {folder} first"


def detect(
    ctx: typer.Context,
    images: list[Path] = typer.Argument(..., metavar="IMAGE", help="Image files to inspect."),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Checkpoint (.safetensors); default: the shipped generic model."
    ),
    references: Path = typer.Option(
        ..., "--references", "-r", help="Folder of good images of the product, one size."
    ),
    passes: int = options.PASSES,
    mask_ratio: float = options.MASK_RATIO,
    schedule: str = options.SCHEDULE,
    metric: str = options.METRIC,
    seed: int = options.SEED,
    device: str = options.DEVICE,
    precision: str = options.PRECISION,
    batch_size: int = options.BATCH_SIZE,
    runtime: str = options.RUNTIME,
    exported: Path | None = typer.Option(
        None,
        "--exported",
        help="Folder of graphs from padformer-edge export (--runtime onnxruntime); "
        "default: <checkpoint stem>-onnx beside the checkpoint.",
    ),
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for heatmap PNGs."),
    raw: bool = typer.Option(False, "--raw", help="Also write each float32 map as .npy."),
    heatmap_max: float | None = typer.Option(
        None, "--heatmap-max", help="Map value drawn as full red (default: each map's max)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per image."),
) -> None:
    """Score each IMAGE against the references; print file, score and time per image."""
    settings = options.detection_settings(ctx.params)
    # Then the files, before torch loads: a mistyped path is refused at once.
    model = resolve_model(model)
    require_file(model, "checkpoint", "give the path of a .safetensors file")
    require_folder(references, "reference folder", "pass a folder of good images of the product")
    for image in images:
        require_file(image, "image", "check the path")
    if exported is not None and settings.runtime != "onnxruntime":
        raise UserError("--exported is read only with --runtime onnxruntime; add it or drop it.")
    if settings.runtime == "onnxruntime":
        exported = exported if exported is not None else default_export_folder(model)
        require_folder(exported, "exported graph folder", export_hint(model, exported))
    from padformer_edge.detect.service import detect_files  # torch: load late

    results = detect_files(
        model, references, images, settings, out, raw, heatmap_max, exported=exported
    )
    if as_json:
        for result in results:
            typer.echo(
                json.dumps(
                    {
                        "file": str(result.path),
                        "score": result.score,
                        "seconds": result.seconds,
                        "heatmap": str(result.heatmap) if result.heatmap else None,
                        "raw_map": str(result.raw_map) if result.raw_map else None,
                    }
                )
            )
        return
    table = Table("file", "score", "time (s)", *(["heatmap"] if out else []))
    for result in results:
        row = [str(result.path), f"{result.score:.4g}", f"{result.seconds:.3f}"]
        table.add_row(*row, *([str(result.heatmap)] if out else []))
    Console().print(table)
