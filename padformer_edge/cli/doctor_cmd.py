"""``padformer-edge doctor``: one line per thing a daemon config depends on, OK or the fix."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import typer
from rich.markup import escape

from padformer_edge.cli.output import echo_json, table_console


def doctor(
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Daemon config (as given to watch); default: the bundled one."
    ),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per check."),
    expect_running: bool = typer.Option(
        False,
        "--expect-running",
        help="The daemon should be running: a missing or stale heartbeat is a problem.",
    ),
) -> None:
    """Check the config, its profiles and models, the device they detect on (the GPU or the
    CPU), camera folders, the database's schema, the alert sinks and free disk (with
    --expect-running, the daemon's heartbeat); exit 1 if anything needs fixing."""
    from padformer_edge.tools.doctor import examine  # the daemon's modules: only when asked for

    findings = examine(config, expect_running)
    if as_json:
        echo_json([asdict(f) for f in findings])
    else:
        out = table_console()
        for f in findings:
            mark = "[green]OK     [/]" if f.ok else "[bold red]PROBLEM[/]"
            out.print(f"{mark} {escape(f.subject)}: {escape(f.detail)}", highlight=False)
    if not all(f.ok for f in findings):
        raise typer.Exit(1)
