"""``padformer-edge demo``: the whole product on a synthetic part, with the shipped generic
model (no training) or, with ``--train``, a model trained for the demo in about ten minutes."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.output import table_console
from padformer_edge.methods.registry import metrics

if TYPE_CHECKING:
    from padformer_edge.demo.model_choice import DemoModel
    from padformer_edge.demo.plan import DemoPlan
    from padformer_edge.demo.run import DemoReport

_out = table_console()


def _label(source_path: str) -> str:
    # Camera file names are NNN-<truth>.png, so the truth travels with the file.
    return Path(source_path).stem.split("-", 1)[1]


def _results(report: DemoReport) -> None:
    table = Table(title=f"result history (threshold {report.threshold:.4g})")
    for column in ("id", "file", "truth", "status", "score", "verdict", "heatmap"):
        table.add_column(column, overflow="fold")
    for row in report.rows:
        verdict = "-" if row["is_anomaly"] is None else "ANOMALY" if row["is_anomaly"] else "ok"
        score = "-" if row["score"] is None else f"{row['score']:.4g}"
        heatmap = Path(row["heatmap_path"]).name if row["heatmap_path"] else "-"
        table.add_row(str(row["id"]), Path(row["source_path"]).name, _label(row["source_path"]),
                      row["status"], score, verdict, heatmap)  # fmt: skip
    _out.print(table)
    defects = [r for r in report.rows if _label(r["source_path"]) != "good"]
    good = [r for r in report.rows if _label(r["source_path"]) == "good"]
    _out.print(
        f"defective parts flagged: {sum(bool(r['is_anomaly']) for r in defects)} of "
        f"{len(defects)}; good parts flagged (false alarms): "
        f"{sum(bool(r['is_anomaly']) for r in good)} of {len(good)}."
    )


def _alerts(report: DemoReport) -> None:
    if not report.alerts:
        _out.print("no alerts were raised.")
        return
    table = Table(title="alerts (one row per sink)")
    for column in ("id", "inspection", "sink", "state", "attempts", "score"):
        table.add_column(column)
    for alert in report.alerts[::-1]:
        score = alert["payload"].get("score")
        table.add_row(str(alert["id"]), str(alert["inspection_id"]), alert["sink"],
                      alert["state"], str(alert["attempts"]),
                      "-" if score is None else f"{score:.4g}")  # fmt: skip
    _out.print(table)


def demo(
    out: Path | None = typer.Option(
        None, "--out", help="Empty folder for everything the demo makes; default: a new temp dir."
    ),
    quick: bool = typer.Option(
        False, "--quick", help="A handful of small images (tiny model with --train): ~a minute."
    ),
    train: bool = typer.Option(
        False, "--train", help="Train a model for the demo first instead of the shipped one."
    ),
    model: Path | None = typer.Option(
        None, "--model", "-m", help="Inspect with this checkpoint instead of the shipped one."
    ),
    shots: int | None = typer.Option(
        None,
        "--shots",
        help="Reference photos the profile keeps, chosen from the rendered good views to "
        "cover the most viewpoints (default 12 of 48; 4 with --train, 2 of 6 with --quick).",
    ),
    metric: str | None = choice_option(
        None,
        "--metric",
        metrics,
        help="The profile's metric (default auto; compare: the learned comparison).",
    ),
) -> None:
    """Render a part, take the shipped model (or train one), calibrate a profile, run the
    daemon on a camera folder and print what the line saw."""
    from padformer_edge.demo.model_choice import choose
    from padformer_edge.demo.plan import FULL, GENERIC, GENERIC_QUICK, QUICK
    from padformer_edge.errors import UserError

    if train and model is not None:
        raise UserError("--train and --model exclude each other; choose one.")
    choice = None
    if train:
        plan = QUICK if quick else FULL
    else:
        choice = choose(GENERIC_QUICK if quick else GENERIC, model)
        plan = choice.plan
    if shots is not None:
        if not 1 <= shots <= plan.train_views:
            raise UserError(
                f"--shots {shots} does not fit the {plan.train_views} good views the demo "
                f"renders; give 1 to {plan.train_views}."
            )
        plan = replace(plan, shots=shots)
    if metric is not None:
        plan = replace(plan, metric=metric)
    started = time.monotonic()

    def say(line: str) -> None:
        _out.print(f"[bold]demo[/] {time.monotonic() - started:5.0f} s  {line}")

    from padformer_edge.demo.run import run_demo  # training code: load only now

    checkpoint = choice.checkpoint if choice else None
    report = run_demo(out, plan, say, checkpoint, choice.note if choice else "")
    _results(report)
    _alerts(report)
    _about_the_model(report, plan, choice)
    _out.print(f"demo finished in {time.monotonic() - started:.0f} s.")
    _out.print(
        f"heatmaps: {report.heatmaps}\n"
        f"alert bodies the command sink received: {report.alerts_file}\n"
        f"daemon log: {report.daemon_log} (it exited with status {report.daemon_exit})\n"
        f"query the history: padformer-edge results list --db {report.database}\n"
        f"                   padformer-edge alerts list --db {report.database}"
    )
    if report.daemon_exit != 0:
        raise typer.Exit(1)


def _about_the_model(report: DemoReport, plan: DemoPlan, choice: DemoModel | None) -> None:
    """How the model was had (the shipped one, or the brief training) and what the
    threshold rests on, so the demo's figures are read for what they are."""
    from padformer_edge.demo.model_choice import describe_scoring

    facts = report.training
    if facts is None and choice is not None:
        _out.print(
            f"\n[bold]The model:[/] {describe_scoring(choice, plan.metric)}. No training "
            f"step: the profile took {plan.shots} reference views of {plan.mesh} and "
            f"{plan.calibration_views} good views to set its threshold."
        )
    elif facts is not None:
        _out.print(
            f"\n[bold]How briefly the model was trained:[/] {facts.steps} optimizer steps "
            f"({facts.samples} samples, {facts.seconds:.0f} s) of the {facts.preset} preset "
            f"on {facts.views} views of one synthetic part, {facts.epochs[0]} within-view + "
            f"{facts.epochs[1]} cross-view epochs. The paper trains 50 + 250 epochs on every "
            "class; scores from a model this young separate good from defective parts only "
            "roughly. The demo shows the product working end to end, not its accuracy."
        )
    if report.promise is not None:
        bounds = report.promise
        _out.print(
            f"What the threshold rests on: {bounds.count} good views; on good parts it "
            f"promises a false-alarm rate of {bounds.low:.1%} to {bounds.high:.1%} (each end "
            f"with {bounds.confidence:.0%} confidence), so the false alarms counted above "
            "are a few parts, not a measured rate."
        )
