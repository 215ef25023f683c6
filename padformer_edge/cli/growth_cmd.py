"""``profile candidates / approve / reject / refresh / rollback``: references that grow
from the line (``store.candidates``, ``profiles.refresh``, ``profiles.versions``).

Their Typer app is merged into ``profile`` by ``cli.app`` (apart from ``profile_cmd`` so
each module keeps one job). Every change names its engineer with ``--yes ENGINEER`` as
``calibrate --from-reviews`` does, by the one rule for who signs (``store.signers``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import echo_json, table_console
from padformer_edge.devices.runtimes import DEVICES
from padformer_edge.profiles.layout import profiles_root
from padformer_edge.profiles.profile import load_profile

if TYPE_CHECKING:  # SQLAlchemy loads only in the commands that open the history
    from sqlalchemy import Engine

    from padformer_edge.profiles.refresh import RefreshPlan
    from padformer_edge.store.signers import Signing

app = typer.Typer()
ROOT_HELP = (
    "Profiles folder; else --config's, else $PADFORMER_EDGE_PROFILES, else <state dir>/profiles."
)
DEVICE_HELP = "Where the model runs (default: the profile's own setting)."
_out = table_console()
_err = Console(stderr=True)


def _say(text: str) -> None:
    _out.print(text, highlight=False, soft_wrap=True)


YES_HELP = (
    "Apply, recorded under this name: once the database has users, a user with role "
    "engineer; before that, any name, recorded beside the shell account."
)
STATES = ("pending", "approved", "rejected", "all")


@contextmanager
def _history(
    db: str | None, config: Path | None, write: bool = False
) -> Iterator[tuple[Engine, str]]:
    """The history database (``--db``, else ``--config``'s, else the default), checked to
    exist at the schema's head, and its description; a writing engine if ``write``."""
    from padformer_edge.store.engine import describe, open_engine, resolve_url
    from padformer_edge.store.migrations import open_checked

    database = database_of(db, config)
    engine = open_checked(database)
    if write:
        engine.dispose()
        engine = open_engine(database)
    try:
        yield engine, describe(resolve_url(database))
    finally:
        engine.dispose()


def _root(root: Path | None, config: Path | None) -> Path:
    """``--root``, else the daemon config's profiles folder, else the default."""
    if config is not None and root is None:
        from padformer_edge.daemon.settings import load_daemon_config

        root = load_daemon_config(config, []).profiles_dir
    return profiles_root(root)


def _engineer(engine: Engine, given: str, signing: Signing) -> str:
    """The name recorded for ``signing`` by the one rule for who signs (store.signers)."""
    from padformer_edge.store.engine import reading
    from padformer_edge.store.signers import signer

    with reading(engine) as conn:
        return signer(conn, given, signing)


@app.command("candidates")
def candidates(
    name: str = typer.Argument(..., help="Profile name."),
    state: str = choice_option("pending", "--state", STATES, help="Which candidates to list."),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per candidate."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """List NAME's reference candidates: good parts from the line (reviewed as false
    alarms, or scored far below the threshold where the profile opts in)."""
    from padformer_edge.store.candidates import list_candidates
    from padformer_edge.store.vocabulary import CandidateState

    wanted = None if state == "all" else CandidateState(state)
    with _history(db, config) as (engine, _):
        found = list_candidates(engine, name, wanted)
    if as_json:
        echo_json([{
            "id": c.id, "inspection": c.inspection_id, "state": c.state.value,
            "origin": c.origin.value, "score": c.score, "threshold": c.threshold,
            "picture": str(c.path), "proposed_at": c.proposed_at.isoformat(),
            "proposed_by": c.proposed_by, "decided_by": c.decided_by, "note": c.note,
        } for c in found])  # fmt: skip
        return
    if not found:
        _say(f"no {state if state != 'all' else ''} candidates of profile '{name}'.")
        return
    table = Table("id", "inspection", "state", "origin", "score", "threshold", "by", "picture")
    for c in found:
        threshold = "-" if c.threshold is None else f"{c.threshold:.6g}"
        by = c.decided_by or c.proposed_by or "-"
        table.add_row(str(c.id), str(c.inspection_id), c.state.value, c.origin.value,
                      f"{c.score:.6g}", threshold, by, str(c.path))  # fmt: skip
    _out.print(table)


def _decide(name: str, ids: list[int], state: str, yes: str, note: str | None,
            db: str | None, config: Path | None) -> None:  # fmt: skip
    from padformer_edge.store.candidates import decide
    from padformer_edge.store.signers import APPROVE, REJECT, check_given
    from padformer_edge.store.vocabulary import CandidateState

    signing = APPROVE if state == "approved" else REJECT
    check_given(yes, signing)
    with _history(db, config, write=True) as (engine, _):
        by = _engineer(engine, yes, signing)
        done = decide(engine, ids, CandidateState(state), by, product=name, note=note)
    listed = ", ".join(str(c.id) for c in done)
    _say(f"{state} candidates {listed} of profile '{name}' (by {by}).")
    if state == "approved":
        _say(f"next: padformer-edge profile refresh {name} --yes {yes.strip()}")


@app.command("approve")
def approve(
    name: str = typer.Argument(..., help="Profile name."),
    ids: list[int] = typer.Argument(..., metavar="ID", help="Candidate ids."),
    yes: str = typer.Option(..., "--yes", metavar="ENGINEER", help=YES_HELP),
    note: str | None = typer.Option(None, "--note", help="Why, kept with the decision."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Approve candidates ID... of NAME as references-to-be; the next `profile refresh`
    copies them into the profile."""
    _decide(name, ids, "approved", yes, note, db, config)


@app.command("reject")
def reject(
    name: str = typer.Argument(..., help="Profile name."),
    ids: list[int] = typer.Argument(..., metavar="ID", help="Candidate ids."),
    yes: str = typer.Option(..., "--yes", metavar="ENGINEER", help=YES_HELP),
    note: str | None = typer.Option(None, "--note", help="Why, kept with the decision."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Reject candidates ID... of NAME: they never become references."""
    _decide(name, ids, "rejected", yes, note, db, config)


@app.command("refresh")
def refresh(
    name: str = typer.Argument(..., help="Profile name."),
    yes: str | None = typer.Option(
        None, "--yes", metavar="ENGINEER",
        help="Install the new version shown; " + YES_HELP[len("Apply, "):],
    ),
    good: Path | None = typer.Option(
        None, "--good", "-g", help="More held-out good images for the calibration."
    ),
    force: list[int] = typer.Option(
        [], "--force", metavar="ID",
        help="Take approved candidate ID although it scores far above the threshold "
        "(recorded in the history); repeatable.",
    ),
    max_references: int | None = typer.Option(
        None, "--max-references", min=1,
        help="Size limit of the references: below it they are re-chosen for coverage, a "
        "profile that fills it keeps its own (default: the profile's growth.max_references).",
    ),
    device: str | None = choice_option(None, "--device", DEVICES, help=DEVICE_HELP),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Re-select NAME's references from its own and the approved candidates (viewpoint
    coverage, up to a size limit), recalibrate on good images held aside, and show the
    new version; with --yes it is installed and the previous one kept for rollback."""
    from padformer_edge.store.candidates import list_candidates
    from padformer_edge.store.signers import INSTALL, check_given
    from padformer_edge.store.vocabulary import CandidateState

    folder = _root(root, config)
    load_profile(folder, name)  # the name before torch loads
    check_given(yes, INSTALL)
    with _history(db, config) as (engine, _):
        by = _engineer(engine, yes, INSTALL) if yes is not None else None
        approved = list_candidates(engine, name, CandidateState.approved)
    from padformer_edge.profiles.refresh import apply_refresh, plan_refresh  # torch

    plan = plan_refresh(folder, name, approved, good=good, force=force,
                        max_references=max_references, device=device)  # fmt: skip
    _show_refresh(plan)
    if by is None:
        plan.discard()
        if plan.refusals:
            _say(f"nothing changed, and `--yes` would be refused for the {len(plan.refusals)} "
                 "reason(s) above; resolve them and preview again.")  # fmt: skip
        else:
            _say(f"nothing changed. To install this version, run `padformer-edge profile "
                 f"refresh {name} --yes ENGINEER`.")  # fmt: skip
        return
    profile = apply_refresh(plan, by)
    _say(f"installed version {profile.config.version} of profile '{name}' (by {by}); the "
         f"previous one is kept: `padformer-edge profile rollback {name} --yes "
         f"{yes.strip()}`.")  # fmt: skip


def _show_refresh(plan: RefreshPlan) -> None:
    """The preview: the version it would install, each candidate's score, and every
    reason it would be refused (it is shown whether or not it may be installed)."""
    name = plan.profile.name
    old = "none" if plan.old_threshold is None else f"{plan.old_threshold:.6g}"
    new = "not measured" if plan.new_threshold is None else f"{plan.new_threshold:.6g}"
    _say(
        f"profile '{name}': version {plan.profile.config.version} -> {plan.config.version}, "
        f"{len(plan.profile.config.references)} -> {len(plan.config.references)} references, "
        f"threshold {old} -> {new} (measured on {len(plan.held)} good images held aside)"
    )
    _say(f"references added: {', '.join(plan.added) or 'none'}; "
         f"dropped: {', '.join(plan.dropped) or 'none'}")  # fmt: skip
    for candidate, score in sorted(plan.scores.items()):
        forced = " (forced)" if candidate in plan.forced else ""
        out = " (left out of this plan)" if candidate in plan.left_out else ""
        _say(f"candidate {candidate}: score {score:.6g} under the current version "
             f"(refused above {plan.limit:.6g}){forced}{out}")  # fmt: skip
    for warning in plan.warnings:
        _err.print(f"[bold yellow]warning:[/] {warning}", highlight=False, soft_wrap=True)
    for refusal in plan.refusals:
        _out.print(f"[bold red]would refuse:[/] {refusal}", highlight=False, soft_wrap=True)


@app.command("rollback")
def rollback(
    name: str = typer.Argument(..., help="Profile name."),
    yes: str = typer.Option(..., "--yes", metavar="ENGINEER", help=YES_HELP),
    to: int | None = typer.Option(
        None, "--to", metavar="VERSION", help="The kept version to bring back (default the newest)."
    ),
    line: list[str] = typer.Option(
        [], "--line", metavar="LINE",
        help="Instead of the profiles folder: assign this line the published version of "
        "NAME it ran before its current one; repeatable.",
    ),
    all_lines: bool = typer.Option(
        False, "--all-lines", help="As --line, for every line assigned NAME."
    ),
    root: Path | None = typer.Option(None, "--root", help=ROOT_HELP),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Bring back an earlier version of NAME (references and threshold) as a new version,
    recorded in its history; with --line or --all-lines, put those lines back on the
    published version they ran before. Runs without torch."""
    from padformer_edge.profiles.versions import rollback_profile
    from padformer_edge.store.signers import ROLLBACK, check_given

    if line or all_lines:
        _rollback_lines(name, yes, to, line, all_lines, db, config)
        return
    folder = _root(root, config)
    load_profile(folder, name)
    check_given(yes, ROLLBACK)
    with _history(db, config) as (engine, _):
        by = _engineer(engine, yes, ROLLBACK)
    profile = rollback_profile(folder, name, by, to)
    change = profile.config.history[-1]
    _say(f"profile '{name}' is now version {profile.config.version}: version "
         f"{change.restored} restored by {by}, threshold {change.new_threshold:.6g}.")  # fmt: skip


def _rollback_lines(name: str, yes: str, to: int | None, lines: list[str], all_lines: bool,
                    db: str | None, config: Path | None) -> None:  # fmt: skip
    """``rollback --line / --all-lines``: each line back on the published version of
    ``name`` it ran before (``store.published.rollback_line``, a transaction per line).
    A line that cannot be rolled back is reported and the rest still are; the command
    then ends with the refusal (exit status 2) naming every line left."""
    from padformer_edge.errors import UserError
    from padformer_edge.store.engine import reading
    from padformer_edge.store.published import lines_running, rollback_line
    from padformer_edge.store.signers import ROLLBACK, check_given

    if to is not None:
        raise UserError(
            f"--to picks a version kept in the profiles folder; to put a line on a given "
            f"published version, run `padformer-edge profile assign {name} --line LINE "
            f"--version {to} --yes ENGINEER`."
        )
    if lines and all_lines:
        raise UserError("give --line LINE or --all-lines, not both.")
    check_given(yes, ROLLBACK)
    with _history(db, config, write=True) as (engine, _):
        by = _engineer(engine, yes, ROLLBACK)
        if all_lines:
            with reading(engine) as conn:
                lines = lines_running(conn, name)
            if not lines:
                raise UserError(f"no line is assigned profile '{name}'; nothing to roll back.")
        left = []
        for each in lines:  # one transaction per line: a refused one leaves the others be
            try:
                assignment = rollback_line(engine, each, name, by)
            except UserError as err:
                left.append(each)
                _err.print(f"[bold red]left:[/] {err}", highlight=False, soft_wrap=True)
                continue
            _say(f"line '{each}' is back on version {assignment.version} of profile "
                 f"'{name}' (rolled back by {by}).")  # fmt: skip
    if left:
        raise UserError(
            f"{len(left)} of {len(lines)} line(s) were left on their version of profile "
            f"'{name}' ({', '.join(left)}), for the reason given for each above; the "
            "others were rolled back."
        )
