"""``padformer-edge export``: write a checkpoint's model as ONNX graphs for another runtime."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.cli.checks import require_file
from padformer_edge.cli.choices import choice_option
from padformer_edge.errors import UserError
from padformer_edge.models import GENERIC, locate_generic_model

FORMATS = ("onnx",)
"""What ``--format`` accepts; OpenVINO is planned (docs/deploy.md) and refused until then."""


def export(
    model: str = typer.Argument(
        ..., metavar="MODEL", help="Checkpoint (.safetensors), or 'generic' for the shipped model."
    ),
    fmt: str = choice_option(
        "onnx",
        "--format",
        FORMATS,
        help="Graph format.",
        refusal="--format '{value}' is not supported yet",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the graphs and manifest."),
) -> None:
    """Export MODEL as ONNX graphs into --out, for detect --runtime onnxruntime."""
    checkpoint = locate_generic_model() if model == GENERIC else Path(model)
    require_file(checkpoint, "checkpoint", f"give '{GENERIC}' or the path of a .safetensors file")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the exported graphs.")
    from padformer_edge.deploy.export import export_onnx  # torch: load late
    from padformer_edge.deploy.onnx_runner import import_onnxruntime
    from padformer_edge.model.checkpoint import load_checkpoint

    import_onnxruntime()  # the extra that brings onnx brings onnxruntime: one sentence for both
    loaded, _ = load_checkpoint(checkpoint)
    manifest = export_onnx(loaded, out)
    for name, digest in manifest["graphs"].items():
        typer.echo(f"{out / name}  sha256 {digest[:16]}")
    typer.echo(f"{out / 'manifest.json'}  (opset {manifest['opset']}, {fmt})")
