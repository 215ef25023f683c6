"""``padformer-edge alerts``: the alert outbox, and a second chance for dead alerts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import table_console
from padformer_edge.store.vocabulary import AlertState

app = typer.Typer(help="List queued, sent and dead alerts; retry dead ones.", no_args_is_help=True)
COLUMNS = ["id", "created_at", "camera", "product", "kind", "sink", "state", "attempts",
           "last_error"]  # fmt: skip
_out = table_console()


@app.command("list")
def list_(
    db: str | None = db_option(),
    config: Path | None = config_option(),
    state: str | None = choice_option(
        None,
        "--state",
        AlertState,
        help="Only alerts in this state.",
        refusal="{flag} '{value}' is not an alert state",
    ),
    sink: str | None = typer.Option(None, "--sink", help="Only alerts for this sink."),
    limit: int = typer.Option(50, "--limit", min=1),
    as_json: bool = typer.Option(False, "--json", help="A JSON array with every field."),
) -> None:
    """Alerts, newest first, with their delivery state and last error."""
    from padformer_edge.daemon.alerts.outbox import list_alerts  # the sinks: only when used
    from padformer_edge.store.schema import open_checked

    wanted = None if state is None else AlertState(state)
    rows = list_alerts(open_checked(database_of(db, config)), state=wanted, sink=sink, limit=limit)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    if not rows:
        _out.print("no alerts match.")
        return
    table = Table()
    for column in COLUMNS:
        table.add_column(column, overflow="fold")
    for row in rows:
        row["created_at"] = row["created_at"][:19].replace("T", " ")
        table.add_row(*("-" if row[c] is None else str(row[c]) for c in COLUMNS))
    _out.print(table)


@app.command("retry")
def retry(
    alert_ids: list[int] = typer.Argument(..., metavar="ID...", help="Alert ids to send again."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Queue dead alerts again with a fresh attempt count; the daemon sends them next poll."""
    from padformer_edge.store.engine import open_engine  # SQLAlchemy: only when run
    from padformer_edge.store.schema import open_checked

    database = database_of(db, config)
    open_checked(database)  # exists and is at head, checked without taking the write lock
    from padformer_edge.daemon.alerts.outbox import retry_alerts

    retried = retry_alerts(open_engine(database), alert_ids)
    typer.echo(f"queued {len(retried)} alert(s) again: {', '.join(map(str, retried))}")
