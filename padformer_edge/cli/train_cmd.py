"""``padformer-edge train``: run a training recipe (one process, or one per GPU under torchrun).

The recipe's ``kind`` says what is trained: ``padformer`` (the default) the reconstruction
model in two stages, ``comparator`` the learned comparison that scores the product's
default metric. Both share the options, the progress bar, the resume point written on
Ctrl-C or SIGTERM and the summary table.
"""

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
from padformer_edge.config import load_config, read_yaml
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
        "its preset and config replace the recipe's model section (PADFormer recipes).",
    ),
    stop_at: int | None = typer.Option(
        None,
        "--stop-at",
        min=1,
        help="End this call after that step, with a resume point (comparator recipes: "
        "a long run spread over sessions).",
    ),
) -> None:
    """Train what the recipe's kind names: PADFormer (kind: padformer, the default) in two
    stages (within-view, then cross-view), or the comparator (kind: comparator), the
    learned comparison behind the default score.

    Ctrl-C (or SIGTERM) writes a resume point; the same command with --resume continues
    exactly.
    For several GPUs (PADFormer): torchrun --nproc-per-node G -m padformer_edge train ...
    """
    raw, _ = read_yaml(config)
    if raw.get("kind") == "comparator":
        if init is not None:
            raise UserError(
                "--init fine-tunes PADFormer; a comparator recipe starts from its own seed, "
                "so leave --init out."
            )
        _train_comparator(config, data, out, resume, device, stop_at)
        return
    if stop_at is not None:
        raise UserError(
            "--stop-at ends a comparator run early; a PADFormer run stops with Ctrl-C and "
            "continues with --resume."
        )
    _train_padformer(config, data, out, resume, device, init)


def _train_padformer(
    config: Path,
    data: Path | None,
    out: Path | None,
    resume: bool,
    device: str | None,
    init: str | None,
) -> None:
    """``train`` on a PADFormer recipe: both stages, a resume point on Ctrl-C or SIGTERM."""
    from padformer_edge_training.config import TrainConfig

    recipe = load_config(config, TrainConfig)  # a mistyped key fails here, before torch
    root = data if data is not None else recipe.data.root
    if root is None:
        raise UserError("no training data given; pass --data DIR or set data.root in the recipe.")
    require_folder(Path(root), "data folder", "pass --data with the dataset root", non_empty=True)
    created = outermost_missing(Path(out if out is not None else recipe.checkpoint.out))

    from padformer_edge.weights import resolve_init
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
    _print_summary(summary.stages, not summary.interrupted, summary.global_step, summary.out)
    if summary.interrupted:
        # SystemExit, not typer.Exit: the root app runs click with standalone_mode=False,
        # which turns typer.Exit into a return value and would lose the status.
        raise SystemExit(130)
    typer.echo(f"model written to {summary.checkpoint}")


def _train_comparator(
    config: Path,
    data: Path | None,
    out: Path | None,
    resume: bool,
    device: str | None,
    stop_at: int | None,
) -> None:
    """Train the comparator on the recipe at ``config``; the command's overrides win."""
    from padformer_edge_training.comparator.recipe import ComparatorRecipe

    recipe = load_config(config, ComparatorRecipe)  # a mistyped key fails here, before torch
    root = data if data is not None else recipe.data.root
    require_folder(Path(root), "data folder", "pass --data with the render's root", non_empty=True)
    created = outermost_missing(Path(out if out is not None else recipe.checkpoint.out))

    from padformer_edge_training.comparator.train import STAGE
    from padformer_edge_training.comparator.train import train as train_comparator
    from padformer_edge_training.progress import Reporter, RichReporter

    reporter = (
        RichReporter(Console(stderr=True), log_every=10)
        if sys.stderr.isatty()
        else Reporter(log_every=10)
    )
    previous_sigterm = signal.signal(signal.SIGTERM, _interrupt)
    try:
        summary = train_comparator(
            recipe, resume, stop_at, data=data, out=out, device=device, reporter=reporter
        )
    except BaseException:
        if created is not None:
            remove_if_nothing_written(created)
        raise
    finally:
        reporter.close()
        signal.signal(signal.SIGTERM, previous_sigterm)
    _print_summary({STAGE: summary.report()}, summary.finished, summary.step, summary.out)
    if summary.interrupted:
        raise SystemExit(130)  # as a PADFormer run; --stop-at reached is not an interruption
    if summary.finished:
        typer.echo(f"comparator written to {summary.checkpoint}")


def _print_summary(stages: dict[str, dict], finished: bool, step: int, out: Path) -> None:
    """The run's table on stdout (progress went to stderr); a run that stopped before its
    last step says how to go on."""
    console = table_console()
    table = Table(title=f"training {'finished' if finished else 'stopped'}")
    # the GPU's mean utilisation only where the driver gave one (CUDA with NVML)
    gpu = any("gpu_utilization_pct" in report for report in stages.values())
    for column in ("stage", "steps", "samples/s", "first loss", "last loss"):
        table.add_column(column)
    if gpu:
        table.add_column("GPU %")
    for stage, report in stages.items():
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
    if not finished:
        console.print(
            f"resume point written at step {step} in {out}; "
            "run the same command with --resume to continue."
        )
