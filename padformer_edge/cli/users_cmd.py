"""``padformer-edge users``: the named people who review on the page and recalibrate.

Users live in the history database (the one ``--db`` or ``--config`` names, as for
``results``). A token is printed once, when it is made (``add``, ``reset-token``): only
its hash is stored, so it cannot be shown again, only replaced. While no user exists
the page and reviews work as they did before users existed; the first ``users add``
makes every review on the page need a named login. On a plant database a user may be
limited to lines (``--line``, ``users lines``): the page then shows them only those
lines' rows.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import echo_json, table_console
from padformer_edge.errors import UserError
from padformer_edge.store.vocabulary import Role

if TYPE_CHECKING:
    from sqlalchemy import Engine

app = typer.Typer(
    help="Add, list and remove the people who log in to the page by name.",
    no_args_is_help=True,
)
_out = table_console()
SHOWN_ONCE = "(shown only now: the database keeps a hash; give it to them privately)"


def line_option() -> list[str]:
    return typer.Option(
        [],
        "--line",
        help="A line they may see and review (repeat for several); none: every line.",
    )


def _lines(names: frozenset[str]) -> str:
    return ", ".join(sorted(names)) if names else "every line"


def _writer(db: str | None, config: Path | None) -> Engine:
    """A writing engine on a database already at the newest schema."""
    from padformer_edge.store import migrations  # SQLAlchemy and Alembic: only when run
    from padformer_edge.store.engine import open_engine

    database = database_of(db, config)
    migrations.open_checked(database).dispose()  # exists and is at head, without the write lock
    return open_engine(database)


def _log(event: str, **fields: str) -> None:
    from padformer_edge.reporting.log import get_logger

    get_logger("users").info(event, **fields)


@app.command("add")
def add(
    name: str = typer.Argument(..., help="Their name, as they will type it to log in."),
    role: str = choice_option(
        Role.operator.value,
        "--role",
        [r.value for r in Role],
        help="operator: reviews inspections; engineer: reviews and applies recalibrations.",
    ),
    line: list[str] = line_option(),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Add user NAME and print their personal token once."""
    from padformer_edge.store.users import add_user

    engine = _writer(db, config)
    try:
        user, token = add_user(engine, name, Role(role), line)
    finally:
        engine.dispose()
    _log("users.added", user=user.name, role=user.role.value, lines=_lines(user.lines))
    typer.echo(f"added {user.name} ({user.role.value}, {_lines(user.lines)}); their token "
               f"{SHOWN_ONCE}:", err=True)  # fmt: skip
    typer.echo(token)


@app.command("reset-token")
def reset(
    name: str = typer.Argument(..., help="The user's name."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Give NAME a new token (printed once); the old one and its page logins stop working."""
    from padformer_edge.store.users import reset_token

    engine = _writer(db, config)
    try:
        user, token = reset_token(engine, name)
    finally:
        engine.dispose()
    _log("users.token_reset", user=user.name)
    typer.echo(f"new token for {user.name} {SHOWN_ONCE}:", err=True)
    typer.echo(token)


@app.command("lines")
def lines(
    name: str = typer.Argument(..., help="The user's name."),
    line: list[str] = line_option(),
    all_lines: bool = typer.Option(
        False, "--all-lines", help="Let them see every line again (no --line)."
    ),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Limit NAME to the lines given with --line, or give every line back with
    --all-lines; their open page sessions follow within seconds."""
    from padformer_edge.store.users import set_lines

    if bool(line) == all_lines:
        raise UserError(
            f"say which lines user '{name}' may see with --line LINE (repeat for several), "
            "or --all-lines for every line; not both."
        )
    engine = _writer(db, config)
    try:
        user = set_lines(engine, name, line)
    finally:
        engine.dispose()
    _log("users.lines_set", user=user.name, lines=_lines(user.lines))
    typer.echo(f"{user.name} ({user.role.value}) sees {_lines(user.lines)}.")


@app.command("list")
def list_(
    as_json: bool = typer.Option(False, "--json", help="A JSON array instead of a table."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Every user with their role, lines and when their token was set (never the token)."""
    from padformer_edge.store.migrations import open_checked
    from padformer_edge.store.users import list_users

    engine = open_checked(database_of(db, config))
    try:
        found = list_users(engine)
    finally:
        engine.dispose()
    rows = [{"name": u.name, "role": u.role.value, "lines": sorted(u.lines),
             "created_at": u.created_at.isoformat(),
             "token_set_at": u.token_set_at.isoformat()} for u in found]  # fmt: skip
    if as_json:
        echo_json(rows)
        return
    if not rows:
        typer.echo("no users: reviews take a free-typed name; 'users add NAME' adds one.")
        return
    table = Table("name", "role", "lines", "added", "token set")
    for row in rows:
        table.add_row(row["name"], row["role"], ", ".join(row["lines"]) or "every line",
                      row["created_at"], row["token_set_at"])  # fmt: skip
    _out.print(table)


@app.command("remove")
def remove(
    name: str = typer.Argument(..., help="The user's name."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Remove without asking."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Remove NAME: their token and page logins stop working; their reviews stay signed."""
    from padformer_edge.store.users import remove_user

    if not yes:
        if not sys.stdin.isatty():  # nobody to ask: a script must say --yes
            raise UserError(f"removing user '{name}' needs confirmation; add --yes.")
        if not typer.confirm(f"Remove user '{name}'?"):
            typer.echo(f"kept user '{name}'.")
            raise typer.Exit(1)
    engine = _writer(db, config)
    try:
        user = remove_user(engine, name)
    finally:
        engine.dispose()
    _log("users.removed", user=user.name)
    typer.echo(f"removed {user.name} ({user.role.value}); their reviews keep their name.")
