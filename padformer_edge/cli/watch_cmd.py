"""``padformer-edge watch``: run the inspection daemon on camera folders until stopped."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.daemon.settings import (  # registers the "daemon" kind
    file_roots,
    load_daemon_config,
)


def watch(
    folders: list[Path] = typer.Argument(
        None, help="Camera folders; replace the camera path of a one-camera config."
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Daemon config (YAML); default: the bundled one."
    ),
) -> None:
    """Inspect every new image in the camera folders; stop with SIGTERM or Ctrl-C."""
    from padformer_edge.daemon.layout import require_profiles, resolve_layout

    settings = load_daemon_config(config, list(folders or []))
    # Folders and profiles (named, readable, calibrated) are checked before torch loads
    # and before the database is written: a typo costs a second and leaves nothing
    # behind. The versions assigned to this line are pulled first (the database only
    # read, and left alone when it does not exist yet), so a new line PC may start with
    # an empty profiles folder.
    layout = resolve_layout(settings)
    from padformer_edge.daemon.assignments import pull_at_start

    pull_at_start(settings, layout.profiles)
    names = {cam.profile for cam in settings.cameras}
    require_profiles(layout, names)
    from padformer_edge.daemon.claim_keeper import ClaimKeeper
    from padformer_edge.daemon.opened import open_line
    from padformer_edge.daemon.stopping import stop_on_signals

    opened = open_line(settings, layout)  # handed to the daemon: read once

    # One daemon per line and camera folder: a held one is refused here, before torch.
    # From then on a stop (a signal, or the plant naming another live holder) is a
    # request the daemon takes up, in whatever phase of its start it comes.
    with ClaimKeeper(settings) as claims, stop_on_signals(claims.stop):
        from padformer_edge.daemon.service import run_daemon  # torch: only when it runs

        server = None
        if settings.http is not None:  # the operator's page, in this process
            from padformer_edge.web.server import make_server

            server = make_server(
                settings.http, settings.database, file_roots(settings), line=settings.line_name
            ).start()
        try:
            code = run_daemon(
                settings, plant_claimed=claims.plant_current, stop=claims.stop, opened=opened
            )
        finally:
            if server is not None:
                server.stop()
    claims.raise_refusal()  # the plant showed another live holder after start: exit 2
    raise typer.Exit(code)
