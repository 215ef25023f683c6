"""The detection settings as CLI options, shared by ``detect`` and ``profile create``.

Both commands tune the same Detector; declaring each option once keeps their names,
defaults and help from drifting apart.
"""

from __future__ import annotations

import typer

PASSES = typer.Option(15, "--passes", help="Masked reconstruction passes per image.")
MASK_RATIO = typer.Option(0.4, "--mask-ratio", help="Share of patches hidden.")
SCHEDULE = typer.Option("random", "--schedule", help="random or balanced masks.")
METRIC = typer.Option(
    "auto",
    "--metric",
    help="auto (fused for edge models, lab otherwise), lab, rgb, feature or fused error.",
)
SEED = typer.Option(0, "--seed", help="Seed of the mask schedule.")
DEVICE = typer.Option("auto", "--device", help="auto, cpu or cuda.")
PRECISION = typer.Option("fp32", "--precision", help="fp32, or bf16/fp16 on CUDA.")
BATCH_SIZE = typer.Option(32, "--batch-size", help="Most passes per model call.")
