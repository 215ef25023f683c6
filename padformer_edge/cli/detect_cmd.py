"""``padformer-edge detect``: score image files against good references, write heatmaps."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from padformer_edge.cli import detection_options as options
from padformer_edge.cli.checks import require_file, require_folder
from padformer_edge.models import resolve_model


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
    out: Path | None = typer.Option(None, "--out", "-o", help="Folder for heatmap PNGs."),
    raw: bool = typer.Option(False, "--raw", help="Also write each float32 map as .npy."),
    heatmap_max: float | None = typer.Option(
        None, "--heatmap-max", help="Map value drawn as full red (default: each map's max)."
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per image."),
) -> None:
    """Score each IMAGE against the references; print file, score and time per image."""
    settings = options.detection_settings(ctx.params)
    # Then the files, before torch loads and before the shipped model is hashed: a
    # mistyped path is refused at once.
    require_folder(references, "reference folder", "pass a folder of good images of the product")
    for image in images:
        require_file(image, "image", "check the path")
    model = resolve_model(model)
    require_file(model, "checkpoint", "give the path of a .safetensors file")
    from padformer_edge.detect.service import detect_files  # torch: load late

    results = detect_files(model, references, images, settings, out, raw, heatmap_max)
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
