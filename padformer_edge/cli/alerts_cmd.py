"""``padformer-edge alerts``: the alert outbox, and a second chance for dead alerts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import table_console
from padformer_edge.cli.results_cmd import line_option
from padformer_edge.store.vocabulary import AlertState

app = typer.Typer(
    help="List queued, sent and dead alerts; retry dead ones; list and acknowledge drifts.",
    no_args_is_help=True,
)
BY_HELP = (
    "Who acknowledges it: once the database has users, one of them (required); before "
    "that, any name, recorded beside the shell account (default: the shell account)."
)
DRIFT_COLUMNS = ["id", "raised_at", "line", "camera", "product", "kind", "p_value", "acknowledged",
                 "reason"]  # fmt: skip
COLUMNS = ["id", "created_at", "line", "camera", "product", "kind", "sink", "state", "attempts",
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
    line: str | None = line_option("Only this line's alerts."),
    limit: int = typer.Option(50, "--limit", min=1),
    as_json: bool = typer.Option(False, "--json", help="A JSON array with every field."),
) -> None:
    """Alerts, newest first, with their delivery state and last error."""
    from padformer_edge.daemon.alerts.outbox import list_alerts  # the sinks: only when used
    from padformer_edge.store.migrations import open_checked

    wanted = None if state is None else AlertState(state)
    engine = open_checked(database_of(db, config))
    rows = list_alerts(engine, state=wanted, sink=sink, limit=limit, line=line)
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
    from padformer_edge.store.migrations import open_checked

    database = database_of(db, config)
    open_checked(database)  # exists and is at head, checked without taking the write lock
    from padformer_edge.daemon.alerts.outbox import retry_alerts

    retried = retry_alerts(open_engine(database), alert_ids)
    typer.echo(f"queued {len(retried)} alert(s) again: {', '.join(map(str, retried))}")


@app.command("drift")
def drift(
    db: str | None = db_option(),
    config: Path | None = config_option(),
    every: bool = typer.Option(False, "--all", help="Acknowledged ones too (the newest 50)."),
    line: str | None = line_option("Only this line's drift events."),
    as_json: bool = typer.Option(False, "--json", help="A JSON array with every field."),
) -> None:
    """Drift events the daemon raised, newest first: the open ones (shown on the page
    until acknowledged), or with --all the acknowledged ones too."""
    from dataclasses import asdict

    from padformer_edge.store.drift import list_drift_events, open_drift_events
    from padformer_edge.store.migrations import open_checked

    engine = open_checked(database_of(db, config))
    events = (
        list_drift_events(engine, line=line) if every else open_drift_events(engine, line=line)
    )
    if as_json:
        typer.echo(json.dumps([asdict(e) for e in events], indent=1, default=str))
        return
    if not events:
        _out.print("no drift events." if every else "no open drift events.")
        return
    table = Table()
    for column in DRIFT_COLUMNS:
        table.add_column(column, overflow="fold")
    for e in events:
        acknowledged = (
            "-" if e.acknowledged_at is None
            else f"{e.acknowledged_by} {e.acknowledged_at.isoformat(sep=' ')[:19]}"
        )  # fmt: skip
        table.add_row(
            str(e.id), e.raised_at.isoformat(sep=" ")[:19], e.line, e.camera, e.product, e.kind,
            f"{e.p_value:.2g}", acknowledged, e.reason,
        )  # fmt: skip
    _out.print(table)


@app.command("ack")
def ack(
    drift_id: int = typer.Argument(..., metavar="ID", help="Drift event id (alerts drift)."),
    by: str | None = typer.Option(None, "--by", metavar="NAME", help=BY_HELP),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Acknowledge drift event ID: the page stops showing it, and the daemon may raise
    that camera's drift again if the next window still shows one."""
    from padformer_edge.store.drift import acknowledge_drift
    from padformer_edge.store.engine import open_engine, reading
    from padformer_edge.store.migrations import open_checked
    from padformer_edge.store.signers import ACKNOWLEDGE, check_given, signer

    check_given(by, ACKNOWLEDGE)  # a slip costs nothing: before the database is read
    database = database_of(db, config)
    checked = open_checked(database)  # exists and is at head, without the write lock
    try:
        with reading(checked) as conn:
            name = signer(conn, by, ACKNOWLEDGE)
    finally:
        checked.dispose()
    event = acknowledge_drift(open_engine(database), drift_id, name)
    typer.echo(
        f"acknowledged drift {event.id} on camera '{event.camera}' (profile "
        f"'{event.product}') as {event.acknowledged_by}."
    )
