"""``padformer-edge config``: validate YAML files before a daemon or a training run uses them."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(help="Validate configuration files.", no_args_is_help=True)


@app.command("check")
def check(
    file: Path = typer.Argument(..., help="The YAML file to validate."),
    kind: str | None = typer.Option(
        None, "--kind", help="Which schema the file follows; detected from its keys if omitted."
    ),
) -> None:
    """Validate FILE against its schema; print the kind it was checked as, or one line
    per problem. What a daemon config points at is left to ``doctor``, and said so."""
    from padformer_edge.tools.config_kinds import check_config  # every schema: only when run

    detected, _ = check_config(file, kind)
    typer.echo(f"{file}: valid {detected} config.")
    if detected == "daemon":
        typer.echo(
            "Only the schema was checked; run `padformer-edge doctor --config "
            f"{file}` to check its camera folders, profiles, database and alert sinks."
        )


@app.command("kinds")
def kinds() -> None:
    """List the config kinds this version knows."""
    from padformer_edge.tools.config_kinds import config_kinds

    for name, model in sorted(config_kinds().items()):
        doc = (model.__doc__ or "").strip().splitlines()
        typer.echo(f"{name}\t{doc[0] if doc else ''}")
