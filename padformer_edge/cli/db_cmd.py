"""``padformer-edge db``: create or upgrade the result store, show its schema, back it up,
copy a line's history into the plant's database."""

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
    from padformer_edge.store import migrations  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import describe, open_engine
    from padformer_edge.store.lines import with_line

    engine = open_engine(db)
    if line is not None:
        engine = with_line(engine, line)
    before = migrations.current_revision(engine)
    head = migrations.migrate_on_start(engine, backup_dir)
    change = "unchanged" if before == head else f"was {before or 'empty'}"
    typer.echo(f"{describe(engine.url)}: at schema {head} ({change})")


@app.command("current")
def current(db: str | None = typer.Option(None, "--db", help=DB_HELP)) -> None:
    """Print the database's schema revision and whether it is the newest."""
    from padformer_edge.store import migrations  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import describe, open_engine

    engine = open_engine(db, read_only=True)
    revision, head = migrations.current_revision(engine), migrations.head_revision()
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
    from padformer_edge.store import migrations  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import open_engine

    saved = migrations.backup(open_engine(db, read_only=True), to)
    typer.echo(f"backup written to {saved}")


@app.command("copy")
def copy(
    source: str = typer.Option(
        ..., "--from", metavar="FILE_OR_URL", help="The line's database (its SQLite file)."
    ),
    target: str = typer.Option(
        ..., "--to", metavar="URL", help="The plant's database (postgresql://...)."
    ),
) -> None:
    """Copy a line's history (finished inspections, reviews, sent alerts, drift events,
    candidates) into the plant's database; a second copy adds only what is new."""
    from padformer_edge.store.engine import describe, open_engine
    from padformer_edge.store.history_copy import copy_history
    from padformer_edge.store.migrations import open_checked, require_head

    reader = open_checked(source)
    writer = open_engine(target)
    try:
        require_head(writer, target)
        report = copy_history(reader, writer)
    finally:
        reader.dispose()
        writer.dispose()
    added = ", ".join(f"{n} {t}" for t, n in report.added.items() if n) or "nothing"
    typer.echo(f"copied into {describe(writer.url)}: {added}.")
    present = sum(report.present.values())
    if present:
        typer.echo(f"{present} rows were there already (copied before) and were left as they are.")
    left = ", ".join(f"{n} {t}" for t, n in report.left.items() if n)
    if left:
        typer.echo(
            f"left on the line: {left} (its queue and unsent alerts, which its daemon "
            "finishes; candidates whose inspection it no longer holds)."
        )
