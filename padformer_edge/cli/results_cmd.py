"""``padformer-edge results``: the inspection history, for people and for scripts.

Every command opens the database read-only (``prune`` and ``review`` excepted) and
refuses one whose schema is not at head. Tables are for terminals; ``--json`` and
``--csv`` are for pipes.
"""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import typer
from rich.table import Table

from padformer_edge.cli.choices import choice_option
from padformer_edge.cli.database import config_option, database_of, db_option
from padformer_edge.cli.output import table_console
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import atomic_path
from padformer_edge.store.timespec import parse_age, parse_time
from padformer_edge.store.vocabulary import REVIEW_FILTERS, ExportFormat, GroupBy, Status

app = typer.Typer(
    help="Query, review, export and prune the inspection history.", no_args_is_help=True
)
LIST_COLUMNS = ["id", "discovered_at", "line", "camera", "product", "profile_version",
                "status", "score", "is_anomaly", "review", "detect_ms", "source_path"]  # fmt: skip
# Shorter headers where the field's name would widen the table; --json keeps the names.
LIST_HEADERS = {"profile_version": "version"}
_out = table_console()


def review_option() -> str | None:
    """``--review``: rows with that review verdict, any review, or none."""
    return choice_option(
        None,
        "--review",
        REVIEW_FILTERS,
        help="Only rows reviewed as true_defect or false_alarm, or any (reviewed), or none.",
        refusal="{flag} '{value}' is not a review filter",
    )


def line_option(help: str = "Only this line's inspections.") -> str | None:
    """``--line``: one line's rows of a database several lines share."""
    return typer.Option(None, "--line", metavar="LINE", help=help)


def _when(text: str | None, option: str) -> datetime | None:
    return parse_time(text, option) if text else None


def screen_time(iso: str) -> str:
    """``2026-03-01 10:00:00 UTC``: seconds, and the zone, so that a reader on a line PC
    set to local time does not take the stored UTC for their own clock."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _table(title: str | None, headers: list[str], rows: list[list[Any]]) -> None:
    if not rows:
        _out.print("no inspections match.")
        return
    table = Table(title=title)
    for header in headers:
        table.add_column(header, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(v) for v in row))
    _out.print(table)


@app.command("list")
def list_(
    db: str | None = db_option(),
    config: Path | None = config_option(),
    line: str | None = line_option(),
    camera: str | None = typer.Option(None, "--camera"),
    product: str | None = typer.Option(None, "--product"),
    since: str | None = typer.Option(
        None, "--since", help="ISO 8601 (UTC unless offset) or 2h, 7d."
    ),
    until: str | None = typer.Option(None, "--until", help="ISO 8601 or an age; exclusive."),
    status: str | None = choice_option(
        None,
        "--status",
        Status,
        help="Only inspections with this status.",
        refusal="{flag} '{value}' is not a status",
    ),
    anomalies: bool = typer.Option(False, "--anomalies", help="Only rows judged anomalous."),
    min_score: float | None = typer.Option(None, "--min-score"),
    review: str | None = review_option(),
    limit: int = typer.Option(50, "--limit", min=1),
    as_json: bool = typer.Option(False, "--json", help="A JSON array of every field."),
    as_csv: bool = typer.Option(False, "--csv", help="CSV with a header row, every field."),
) -> None:
    """Inspections, newest first."""
    from padformer_edge.store import history, migrations  # SQLAlchemy: only when run
    from padformer_edge.store.csv_cells import SafeDictWriter

    if as_json and as_csv:
        raise UserError("--json and --csv exclude each other; pick one.")
    filters = history.Filters(
        line=line,
        camera=camera,
        product=product,
        since=_when(since, "--since"),
        until=_when(until, "--until"),
        status=None if status is None else Status(status),
        anomalies_only=anomalies,
        min_score=min_score,
        review=review,  # type: ignore[arg-type]
    )
    if filters.since and filters.until and filters.since >= filters.until:
        raise UserError(f"--since {since} is not before --until {until}; swap or widen them.")
    engine = migrations.open_checked(database_of(db, config))
    rows = [history.record(r) for r in history.list_inspections(engine, filters, limit)]
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
    elif as_csv:
        writer = SafeDictWriter(sys.stdout, fieldnames=history.RECORD_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    else:
        for r in rows:  # seconds are precise enough on screen; --json keeps the rest
            r["discovered_at"] = screen_time(r["discovered_at"])
        headers = [LIST_HEADERS.get(c, c) for c in LIST_COLUMNS]
        _table(None, headers, [[r[c] for c in LIST_COLUMNS] for r in rows])


@app.command("show")
def show(
    inspection_id: int = typer.Argument(..., metavar="ID"),
    db: str | None = db_option(),
    config: Path | None = config_option(),
    as_json: bool = typer.Option(False, "--json", help="One JSON object with its alerts."),
) -> None:
    """Every field of one inspection, its heatmap path and the alerts it raised."""
    from padformer_edge.store import history, migrations  # SQLAlchemy: only when run

    row = history.get_inspection(migrations.open_checked(database_of(db, config)), inspection_id)
    if row is None:
        raise UserError(f"there is no inspection {inspection_id}; 'results list' shows the ids.")
    fields = history.record(row)
    alerts = [
        {
            "id": a.id,
            "sink": a.sink,
            "state": a.state.value,
            "attempts": a.attempts,
            "next_attempt_at": a.next_attempt_at.isoformat(),
            "last_error": a.last_error,
            "sent_at": a.sent_at.isoformat() if a.sent_at else None,
            "payload": json.loads(a.payload),
        }
        for a in row.alerts
    ]
    if as_json:
        typer.echo(json.dumps({**fields, "alerts": alerts}, indent=1))
        return
    _table(f"inspection {inspection_id}", ["field", "value"], [[k, v] for k, v in fields.items()])
    if alerts:
        headers = ["id", "sink", "state", "attempts", "sent_at", "last_error"]
        _table("alerts", headers, [[a[h] for h in headers] for a in alerts])
    else:
        _out.print("no alerts.")


@app.command("stats")
def stats(
    db: str | None = db_option(),
    config: Path | None = config_option(),
    by: str = choice_option(
        "all",
        "--by",
        get_args(GroupBy),
        help="How to group (hours and days in UTC).",
        refusal="{flag} '{value}' is not a grouping",
    ),
    since: str | None = typer.Option(None, "--since", help="ISO 8601 or an age like 24h."),
    line: str | None = line_option(),
    as_json: bool = typer.Option(False, "--json", help="A JSON array, one object per group."),
) -> None:
    """Counts, anomaly rate, failures and p50/p95 of score and detect time per group."""
    from padformer_edge.store import history, migrations  # SQLAlchemy: only when run

    engine = migrations.open_checked(database_of(db, config))
    groups = history.stats(engine, by, _when(since, "--since"), line)  # type: ignore[arg-type]
    rows = [{**vars(g), "anomaly_rate": g.anomaly_rate} for g in groups]
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    headers = [
        "group",
        "total",
        "done",
        "anomalies",
        "anomaly_rate",
        "failed",
        "skipped",
        "queued",
        "score_p50",
        "score_p95",
        "detect_ms_p50",
        "detect_ms_p95",
    ]
    _table(f"inspections by {by}", headers, [[r[h] for h in headers] for r in rows])


@app.command("export")
def export(
    file: Path = typer.Argument(..., help="Output file; written whole or not at all."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
    fmt: str = choice_option(
        "csv",
        "--format",
        get_args(ExportFormat),
        help="File format.",
        refusal="{flag} '{value}' is not supported",
    ),
    since: str | None = typer.Option(None, "--since", help="ISO 8601 or an age like 7d."),
    line: str | None = line_option(),
    review: str | None = review_option(),
) -> None:
    """Stream every inspection with its review (oldest first) to FILE in constant memory."""
    from padformer_edge.store import history, migrations  # SQLAlchemy: only when run

    engine = migrations.open_checked(database_of(db, config))
    filters = history.Filters(
        line=line, since=_when(since, "--since"), review=review  # type: ignore[arg-type]
    )
    try:
        with (
            atomic_path(file, fix="check the folder exists and is writable") as partial,
            open(partial, "w", encoding="utf-8", newline="") as out,
        ):
            count = history.export(engine, out, fmt, filters)  # type: ignore[arg-type]
    except OSError as err:
        raise UserError(
            f"cannot write {file} ({err.strerror}); check the folder exists and is writable."
        ) from err
    typer.echo(f"exported {count} inspections to {file}")


@app.command("prune")
def prune(
    older_than: str = typer.Option(..., "--older-than", help="An age like 30d or 12h."),
    db: str | None = db_option(),
    config: Path | None = config_option(),
    keep_anomalies: bool = typer.Option(False, "--keep-anomalies", help="Keep anomalous rows."),
    line: str | None = line_option("Only this line's rows (its heatmaps are on its own PC)."),
) -> None:
    """Delete finished inspections older than an age, with their alerts and heatmap files."""
    from padformer_edge.store import history, migrations  # SQLAlchemy: only when run
    from padformer_edge.store.engine import open_engine

    cutoff = datetime.now(UTC) - parse_age(older_than)
    database = database_of(db, config)
    migrations.open_checked(database)  # exists and is at head, without the write lock
    result = history.prune(
        open_engine(database), cutoff, keep_anomalies=keep_anomalies, line=line
    )
    typer.echo(
        f"pruned {result.rows} inspections and {result.heatmaps_deleted} heatmap files"
        + (
            f" ({result.heatmaps_missing} heatmaps were already gone)"
            if result.heatmaps_missing
            else ""
        )
    )


@app.command("review")
def review(
    inspection_id: int = typer.Argument(..., metavar="ID"),
    true_defect: bool = typer.Option(
        False, "--true-defect", help="The part really is defective: the alarm was right."
    ),
    false_alarm: bool = typer.Option(
        False, "--false-alarm", help="The part is good: the detector was wrong to flag it."
    ),
    note: str | None = typer.Option(None, "--note", help="What the reviewer saw (optional)."),
    by: str | None = typer.Option(
        None,
        "--by",
        metavar="NAME",
        help="Who reviewed: once the database has users (padformer-edge users), one of "
        "them (required); before that, any name, recorded beside the shell account "
        "(default: the shell account).",
    ),
    db: str | None = db_option(),
    config: Path | None = config_option(),
) -> None:
    """Mark inspection ID a true defect or a false alarm; a second review replaces the first."""
    if true_defect == false_alarm:
        raise UserError("give exactly one of --true-defect or --false-alarm.")
    from padformer_edge.reporting.log import get_logger
    from padformer_edge.store import migrations  # SQLAlchemy: only when run
    from padformer_edge.store.engine import open_engine, reading
    from padformer_edge.store.models import ReviewVerdict
    from padformer_edge.store.reviews import save_review
    from padformer_edge.store.signers import REVIEW, check_given, signer

    verdict = ReviewVerdict.true_defect if true_defect else ReviewVerdict.false_alarm
    check_given(by, REVIEW)  # a slip costs nothing: before the database is read
    database = database_of(db, config)
    checked = migrations.open_checked(database)  # exists and is at head, without the write lock
    try:
        with reading(checked) as conn:
            reviewer = signer(conn, by, REVIEW)
    finally:
        checked.dispose()
    saved = save_review(open_engine(database), inspection_id, verdict,
                        reviewer=reviewer, note=note)  # fmt: skip
    get_logger("results").info(
        "review.saved", inspection=inspection_id, verdict=verdict.value, reviewer=saved.reviewer,
        replaced=saved.replaced.value if saved.replaced else None, via="cli",
    )  # fmt: skip
    again = f" (was {saved.replaced.value})" if saved.replaced else ""
    typer.echo(f"inspection {inspection_id} reviewed as {verdict.value}{again} by {saved.reviewer}")
