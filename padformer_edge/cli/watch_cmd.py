"""``padformer-edge watch``: run the inspection daemon on camera folders until stopped."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.daemon.settings import load_daemon_config  # registers the "daemon" kind


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
    # Folders and profile names are checked before torch loads and before the database
    # is touched: a typo costs a second and leaves nothing behind.
    require_profiles(resolve_layout(settings), {cam.profile for cam in settings.cameras})
    from padformer_edge.daemon.service import run_daemon  # torch: only when it runs

    raise typer.Exit(run_daemon(settings))
