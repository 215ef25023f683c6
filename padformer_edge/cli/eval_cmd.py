"""``padformer-edge eval``: few-shot detection quality of a checkpoint on a test split."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.cli import detection_options as options
from padformer_edge.cli.checks import require_file, require_folder
from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.output import table_console
from padformer_edge.cli.progress import job_progress
from padformer_edge.detect.ref_strategy import REF_STRATEGIES
from padformer_edge.detect.settings import DetectionSettings


@options.with_detection_options(
    without=("runtime",), seed_help="Seed of reference draws and masks."
)
def evaluate(
    model: Path = typer.Option(..., "--model", "-m", help="Checkpoint (.safetensors)."),
    data: Path = typer.Option(..., "--data", help="Dataset root (MAD-Sim or MVTec-AD layout)."),
    classes: list[str] | None = typer.Option(
        None, "--classes", help="Evaluate only this class (repeatable)."
    ),
    shots: int = typer.Option(4, "--shots", help="References per test image (N)."),
    settings: DetectionSettings = options.FROM_OPTIONS,
    ref_strategy: str = choice_option(
        "random",
        "--ref-strategy",
        REF_STRATEGIES,
        help="random, or nearest/farthest by camera pose.",
        refusal="reference strategy '{value}' is unknown",
    ),
    max_per_label: int | None = typer.Option(
        None, "--max-per-label", help="Score only the first K test images of each label."
    ),
    out: Path | None = typer.Option(
        None, "--out", "-o", help="Folder for the outputs (default: <state dir>/eval)."
    ),
) -> None:
    """Score the test split against N good references per class and report image AUROC,
    pixel AUROC and AUPRO per class and defect type; writes metrics.json and report.html.

    The detection options are those of ``detect`` and ``profile create``, so a profile's
    settings can be evaluated exactly (``--seed`` also seeds the reference draws)."""
    require_file(model, "checkpoint", "give the path of a .safetensors file")
    require_folder(data, "data folder", "pass --data with the dataset root", non_empty=True)
    from padformer_edge_training.evaluation.protocol import EvalOptions
    from padformer_edge_training.evaluation.report import rich_table
    from padformer_edge_training.evaluation.service import evaluate_checkpoint

    if out is None:  # never the folder the command runs in
        from padformer_edge.store.locations import state_dir

        out = state_dir() / "eval"
    eval_options = EvalOptions(shots, ref_strategy, settings.seed, max_per_label)
    with job_progress("evaluating") as progress:
        run = evaluate_checkpoint(
            model,
            data,
            out,
            eval_options,
            categories=classes or None,
            settings=settings,
            on_start=progress.set_total,
            progress=progress.advance,
        )
    title = f"{shots}-shot, {ref_strategy} references, {settings.passes} passes (values in %)"
    table_console().print(rich_table(run.payload, title))
    typer.echo(f"metrics: {run.metrics_path}\nreport: {run.report_path}")
