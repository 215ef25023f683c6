"""``padformer-edge state``: copy the whole state folder out, and back in elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from padformer_edge.tools.state_copy import CopyReport

app = typer.Typer(
    help="Back up or restore the state folder (history, profiles, heatmaps).",
    no_args_is_help=True,
)

DB_HELP = "Database path or URL; else $PADFORMER_EDGE_DB, else the default file in the state dir."


def _say(report: CopyReport, verb: str) -> None:
    size = report.bytes / (1 << 20)
    database = f", database {report.database}" if report.database else ""
    typer.echo(f"{verb} {report.files} files ({size:.1f} MiB{database}) in {report.folder}")
    for note in report.notes:
        typer.echo(f"note: {note}")


@app.command("backup")
def backup(
    destination: Path = typer.Argument(..., help="New or empty folder for the copy."),
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
) -> None:
    """Copy the state folder into DESTINATION, while the daemon may keep running; move
    that folder to another place or PC and restore it there."""
    from padformer_edge.tools.state_copy import back_up_state  # SQLite and YAML: only when run

    _say(back_up_state(destination, db), "backed up")


@app.command("restore")
def restore(
    source: Path = typer.Argument(..., help="A folder made by `state backup`."),
) -> None:
    """Copy the backup in SOURCE into the state folder ($PADFORMER_EDGE_STATE_DIR), which
    must be new or empty; every file is checked against the backup's sha256 first."""
    from padformer_edge.tools.state_copy import restore_state

    _say(restore_state(source), "restored")
