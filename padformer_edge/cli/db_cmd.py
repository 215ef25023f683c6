"""``padformer-edge db``: create or upgrade the result store, show its schema, back it up."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Manage the result database.", no_args_is_help=True)

DB_HELP = "Database path or URL; else $PADFORMER_EDGE_DB, else the default file in the state dir."


@app.command("upgrade")
def upgrade(
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    backup_dir: Path | None = typer.Option(
        None,
        "--backup-dir",
        help="Where the pre-upgrade backup goes; default backups/ beside the database.",
    ),
    line: str | None = typer.Option(
        None,
        "--line",
        metavar="LINE",
        help="The line the rows already stored belong to, when this upgrade gives them one "
        "(schema 0008); use the daemon config's line. Default: the host name.",
    ),
) -> None:
    """Create the database or bring it to the newest schema (after a backup if it had data)."""
    from padformer_edge.store import schema  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import describe, open_engine
    from padformer_edge.store.lines import with_line

    engine = open_engine(db)
    if line is not None:
        engine = with_line(engine, line)
    before = schema.current_revision(engine)
    head = schema.migrate_on_start(engine, backup_dir)
    change = "unchanged" if before == head else f"was {before or 'empty'}"
    typer.echo(f"{describe(engine.url)}: at schema {head} ({change})")


@app.command("current")
def current(db: str | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
    """Print the database's schema revision and whether it is the newest."""
    from padformer_edge.store import schema  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import describe, open_engine

    engine = open_engine(db, read_only=True)
    revision, head = schema.current_revision(engine), schema.head_revision()
    state = "up to date" if revision == head else f"behind, newest is {head}"
    typer.echo(f"{describe(engine.url)}: schema {revision or 'none'} ({state})")


@app.command("backup")
def backup(
    db: str | None = typer.Option(None, "--db", help=DB_HELP),
    to: Path | None = typer.Option(
        None,
        "--to",
        help="Backup file; default backups/<name>-<UTC time>.sqlite3 beside the database.",
    ),
) -> None:
    """Copy a SQLite database consistently while the daemon keeps writing."""
    from padformer_edge.store import schema  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import open_engine

    saved = schema.backup(open_engine(db, read_only=True), to)
    typer.echo(f"backup written to {saved}")
