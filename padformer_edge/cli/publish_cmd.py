"""``profile publish / assign / assignments``: profiles published from the workstation
to the plant's database and the version each line runs (``profiles.publish``,
``store.published``); ``profile rollback --line`` is ``growth_cmd``'s rollback.

Their Typer app is merged into ``profile`` by ``cli.app``. Every change names its
engineer with ``--yes ENGINEER`` by the one rule for who signs (``store.signers``). No
command here imports torch.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from padformer_edge.cli.database import config_option, db_option
from padformer_edge.cli.growth_cmd import YES_HELP, _engineer, _history, _root, _say
from padformer_edge.cli.output import echo_json, table_console
from padformer_edge.store.lines import LINE_PATTERN, MAX_LINE_CHARS

app = typer.Typer()
ROOT_HELP = (
    "Profiles folder; else --config's, else $PADFORMER_EDGE_PROFILES, else <state dir>/profiles."
)
_out = table_console()


def check_line(line: str) -> str:
    """A line name as the daemon config accepts it, or one sentence."""
    import re

    if not re.match(LINE_PATTERN, line) or len(line) > MAX_LINE_CHARS:
        raise typer.BadParameter(
            f"'{line}' is not a line name; use up to {MAX_LINE_CHARS} letters, digits, '.', "
            "'_' or '-' (the daemon config's line)."
        )
    return line


@app.command("publish")
def publish(
    name: str = typer.Argument(..., help="Profile name."),
    yes: str = typer.Option(..., "--yes", metavar="ENGINEER", help=YES_HELP),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Store NAME's current version (profile.yaml, references, exported graphs, the
    sha256 of every file) in the database, for the lines to pull once it is assigned."""
    from padformer_edge.profiles.profile import load_profile
    from padformer_edge.profiles.publish import publish_profile
    from padformer_edge.store.signers import PUBLISH, check_given

    folder = _root(root, config)
    load_profile(folder, name)  # the name before the database
    check_given(yes, PUBLISH)
    with _history(db, config, write=True) as (engine, where):
        by = _engineer(engine, yes, PUBLISH)
        version, new = publish_profile(folder, name, engine, by)
    if not new:
        _say(f"version {version.version} of profile '{name}' was already published in "
             f"{where} (by {version.published_by}); nothing changed.")  # fmt: skip
        return
    _say(f"published version {version.version} of profile '{name}' in {where} (by {by}); "
         f"next: padformer-edge profile assign {name} --line LINE --yes "
         f"{yes.strip()}")  # fmt: skip


@app.command("assign")
def assign(
    name: str = typer.Argument(..., help="Profile name."),
    line: list[str] = typer.Option(
        ...,
        "--line",
        metavar="LINE",
        callback=lambda v: [check_line(x) for x in v],
        help="The line that is to run it (its daemon config's line); repeatable.",
    ),
    version: int | None = typer.Option(
        None,
        "--version",
        metavar="VERSION",
        min=1,
        help="The published version (default the newest).",
    ),
    yes: str = typer.Option(..., "--yes", metavar="ENGINEER", help=YES_HELP),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Record that each --line runs a published version of NAME; the line's daemon pulls
    it, checks every file's sha256 and takes it up without a restart."""
    from padformer_edge.store.published import assign as record
    from padformer_edge.store.signers import ASSIGN, check_given

    check_given(yes, ASSIGN)
    with _history(db, config, write=True) as (engine, _):
        by = _engineer(engine, yes, ASSIGN)
        for each in line:
            assignment, new = record(engine, each, name, version, by)
            if new:
                _say(f"line '{each}' runs version {assignment.version} of profile '{name}' "
                     f"(assigned by {by}).")  # fmt: skip
            else:
                _say(f"line '{each}' already runs version {assignment.version} of profile "
                     f"'{name}'; nothing changed.")  # fmt: skip


@app.command("assignments")
def assignments(
    line: str | None = typer.Option(None, "--line", metavar="LINE", help="This line only."),
    as_json: bool = typer.Option(
        False, "--json", help="A JSON array, one object per line and profile."
    ),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Which version of which profile each line is assigned, by whom and when."""
    from padformer_edge.store.engine import reading
    from padformer_edge.store.published import assigned

    with _history(db, config) as (engine, _), reading(engine) as conn:
        found = assigned(conn, line)
    if as_json:
        echo_json([{
            "line": a.line, "profile": a.profile, "version": a.version, "action": a.action,
            "assigned_by": a.assigned_by, "assigned_at": a.assigned_at.isoformat(),
        } for a in found])  # fmt: skip
        return
    if not found:
        _say("no line is assigned a published profile; see `padformer-edge profile assign`.")
        return
    table = Table("line", "profile", "version", "action", "by", "at")
    for a in found:
        table.add_row(a.line, a.profile, str(a.version), a.action, a.assigned_by,
                      a.assigned_at.isoformat(timespec="seconds"))  # fmt: skip
    _out.print(table)
