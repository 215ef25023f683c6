"""``padformer-edge watch``: run the inspection daemon on camera folders until stopped."""

from __future__ import annotations

from pathlib import Path

import typer

from padformer_edge.daemon import load_daemon_config, run_daemon


def watch(
    folders: list[Path] = typer.Argument(
        None, help="Camera folders; replace the camera path of a one-camera config."
    ),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Daemon config (YAML); default: the bundled one."
    ),
) -> None:
    """Inspect every new image in the camera folders; stop with SIGTERM or Ctrl-C."""
    raise typer.Exit(run_daemon(load_daemon_config(config, list(folders or []))))
