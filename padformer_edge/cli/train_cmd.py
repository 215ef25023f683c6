"""``padformer-edge train``: run a training recipe (one process, or one per GPU under torchrun)."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from padformer_edge.cli.checks import (
    outermost_missing,
    remove_if_nothing_written,
    require_folder,
)
from padformer_edge.cli.output import table_console
from padformer_edge.config import load_config
from padformer_edge.errors import UserError


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def train(
    config: Path = typer.Option(
        ..., "--config", help="Training recipe, e.g. config/train/small-synth.yaml."
    ),
    data: Path | None = typer.Option(None, "--data", help="Dataset root; overrides data.root."),
    out: Path | None = typer.Option(None, "--out", help="Run folder; overrides checkpoint.out."),
    resume: bool = typer.Option(
        False, "--resume", help="Continue the run in --out from its resume point."
    ),
    device: str | None = typer.Option(
        None, "--device", help="auto, cpu, cuda or cuda:N; overrides device."
    ),
    init: str | None = typer.Option(
        None,
        "--init",
        help="Fine-tune from 'generic' (the shipped model) or a checkpoint path; "
        "its preset and config replace the recipe's model section.",
    ),
) -> None:
    """Train PADFormer in two stages (within-view, then cross-view) on all classes of a dataset.

    Ctrl-C (or SIGTERM) writes a resume point; the same command with --resume continues
    exactly.
    For several GPUs: torchrun --nproc-per-node G -m padformer_edge train ...
    """
    from padformer_edge_training.config import TrainConfig

    recipe = load_config(config, TrainConfig)  # a mistyped key fails here, before torch
    root = data if data is not None else recipe.data.root
    if root is None:
        raise UserError("no training data given; pass --data DIR or set data.root in the recipe.")
    require_folder(Path(root), "data folder", "pass --data with the dataset root", non_empty=True)
    created = outermost_missing(Path(out if out is not None else recipe.checkpoint.out))

    from padformer_edge.models import resolve_init
    from padformer_edge_training.progress import Reporter, RichReporter
    from padformer_edge_training.trainer import run_training

    start = resolve_init(init)

    # A scheduler or `systemctl stop` sends SIGTERM: stop like Ctrl-C, leaving a resume point.
    # The previous handler comes back afterwards: the command also runs inside other
    # processes (tests, the GPU session's callers), which must not keep this one.
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    main_rank = os.environ.get("RANK", "0") == "0"
    reporter = (
        RichReporter(Console(stderr=True)) if main_rank and sys.stderr.isatty() else Reporter()
    )
    try:
        summary = run_training(recipe, data, out, resume, device, reporter, init=start)
    except BaseException:
        if created is not None and main_rank:
            remove_if_nothing_written(created)  # a failed run leaves no empty run folder
        raise
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
    if not main_rank:
        return
    console = table_console()  # the summary is the command's result: stdout; progress is on stderr
    table = Table(title=f"training {'stopped' if summary.interrupted else 'finished'}")
    # the GPU's mean utilisation only where the driver gave one (CUDA with NVML)
    gpu = any("gpu_utilization_pct" in report for report in summary.stages.values())
    for column in ("stage", "steps", "samples/s", "first loss", "last loss"):
        table.add_column(column)
    if gpu:
        table.add_column("GPU %")
    for stage, report in summary.stages.items():
        if not report["total_steps"]:  # a stage an interrupted run never reached
            continue
        cells = [
            stage,
            f"{report['steps']}/{report['total_steps']}",
            str(report["samples_per_s"]),
            str(report["first_loss"]),
            str(report["last_loss"]),
        ]
        if gpu:
            cells.append(str(report.get("gpu_utilization_pct", "-")))
        table.add_row(*cells)
    console.print(table)
    if summary.interrupted:
        console.print(
            f"resume point written at step {summary.global_step} in {summary.out}; "
            "run the same command with --resume to continue."
        )
        # SystemExit, not typer.Exit: the root app runs click with standalone_mode=False,
        # which turns typer.Exit into a return value and would lose the status.
        raise SystemExit(130)
    typer.echo(f"model written to {summary.checkpoint}")
