"""Which database a history command reads: ``--db``, else the daemon config's, else the
default. An operator already has the daemon config on the line PC; ``--config`` spares
them copying its database path (and getting it wrong) for every ``results`` or
``alerts`` command.
"""

from __future__ import annotations

from pathlib import Path

import typer

DB_HELP = "Database path or URL; else --config's, else $PADFORMER_EDGE_DB, else the default file."
CONFIG_HELP = "Daemon config (as given to watch); its database is read unless --db is given."


def db_option() -> str | None:
    """The ``--db`` option every history command takes."""
    return typer.Option(None, "--db", help=DB_HELP)


def config_option() -> Path | None:
    """The ``--config`` option every history command takes."""
    return typer.Option(None, "--config", "-c", help=CONFIG_HELP)


def database_of(db: str | None, config: Path | None) -> str | None:
    """``db`` when given, else the ``database`` of the daemon config ``config`` (validated
    as ``watch`` would), else None: the engine then falls back to $PADFORMER_EDGE_DB and
    the state directory, exactly as the daemon does."""
    if db is not None or config is None:
        return db
    from padformer_edge.daemon.settings import load_daemon_config  # only when asked for

    return load_daemon_config(config, []).database
