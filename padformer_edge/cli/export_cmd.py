"""``padformer-edge export``: write a checkpoint's model as ONNX graphs (and, for
``--format openvino``, their OpenVINO IR) for another runtime."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.cli.checks import require_file
from padformer_edge.cli.choices import choice_option
from padformer_edge.errors import UserError
from padformer_edge.weights import GENERIC, locate_generic_model

FORMATS = ("onnx", "openvino")
"""What ``--format`` accepts: ONNX graphs, or ONNX graphs plus their OpenVINO IR."""


def export(
    model: str = typer.Argument(
        ..., metavar="MODEL", help="Checkpoint (.safetensors), or 'generic' for the shipped model."
    ),
    fmt: str = choice_option(
        "onnx",
        "--format",
        FORMATS,
        help="Graph format: onnx (for onnxruntime), or openvino (the ONNX graphs plus "
        "their OpenVINO IR, for both runtimes).",
        refusal="--format '{value}' is not supported yet",
    ),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the graphs and manifest."),
) -> None:
    """Export MODEL as graphs into --out, for detect --runtime onnxruntime or openvino."""
    checkpoint = locate_generic_model() if model == GENERIC else Path(model)
    require_file(checkpoint, "checkpoint", f"give '{GENERIC}' or the path of a .safetensors file")
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a folder for the exported graphs.")
    from padformer_edge.deploy.export import export_onnx  # torch: load late
    from padformer_edge.deploy.onnx_runner import import_onnxruntime
    from padformer_edge.deploy.openvino_export import export_openvino, import_openvino
    from padformer_edge.model.checkpoint import load_checkpoint

    import_onnxruntime()  # the extra that brings onnx brings onnxruntime: one sentence for both
    if fmt == "openvino":
        import_openvino()  # before the checkpoint loads: a missing package stops at once
    loaded, _ = load_checkpoint(checkpoint)
    manifest = export_openvino(loaded, out) if fmt == "openvino" else export_onnx(loaded, out)
    graphs = {**manifest["graphs"], **manifest.get("openvino", {}).get("graphs", {})}
    for name, digest in graphs.items():
        typer.echo(f"{out / name}  sha256 {digest[:16]}")
    typer.echo(f"{out / 'manifest.json'}  (opset {manifest['opset']}, {fmt})")
