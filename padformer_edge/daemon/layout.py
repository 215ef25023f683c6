"""Where a daemon config's folders are, resolved and checked before anything starts.

Torch-free on purpose: ``watch`` runs these checks before it imports the model stack,
so a mistyped camera folder or profile name is reported in a second, and before the
database is created or migrated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from padformer_edge.daemon.intake import Camera
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.profiles.layout import PROFILE_FILE, profiles_root
from padformer_edge.store.engine import state_dir


@dataclass(frozen=True)
class Layout:
    """Config paths made absolute: relative ones live under the state directory."""

    cameras: list[Camera]
    heatmaps: Path
    profiles: Path


def resolve_layout(config: DaemonConfig) -> Layout:
    """Absolute folders, checked before anything starts; a profile is one product."""
    base = state_dir()
    heatmaps = base / (config.heatmaps or "heatmaps")
    profiles = base / config.profiles_dir if config.profiles_dir else profiles_root()
    cameras = []
    for cam in config.cameras:
        root = (base / cam.path).expanduser()
        if not root.is_dir():
            raise UserError(
                f"camera folder {root} of camera '{cam.name}' does not exist; "
                "create it or fix its path in the daemon config."
            )
        root = root.resolve()
        if heatmaps.resolve().is_relative_to(root):
            raise UserError(
                f"heatmap folder {heatmaps} is inside camera folder {root}; "
                "heatmaps would be inspected as camera images, choose another."
            )
        cameras.append(Camera(cam.name, root, product=cam.profile))
    return Layout(cameras, heatmaps, profiles)


def require_profiles(layout: Layout, names: set[str]) -> None:
    """``UserError`` naming the first profile in ``names`` with no ``profile.yaml``."""
    for name in sorted(names):
        if not (layout.profiles / name / PROFILE_FILE).is_file():
            known = sorted(
                d.name for d in layout.profiles.glob("*") if (d / PROFILE_FILE).is_file()
            )
            raise UserError(
                f"profile '{name}' does not exist under {layout.profiles} (known: "
                f"{', '.join(known) or 'none'}); create it with `padformer-edge profile create`."
            )
