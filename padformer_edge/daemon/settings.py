"""Which daemon config runs: a given file or the bundled default, plus folder overrides.

``padformer-edge watch /camera/out`` must work with nothing else, so the bundled config
describes one camera and one profile, and folders on the command line replace its camera
path. With several folders each becomes a camera named after its folder, sharing the
single camera's profile. A config with several cameras already says where each one
writes, so folders on the command line would be ambiguous and are refused.
"""

from __future__ import annotations

from pathlib import Path

from padformer_edge.config import CameraConfig, DaemonConfig, load_config
from padformer_edge.errors import UserError

BUNDLED_CONFIG = Path(__file__).resolve().parents[2] / "config" / "daemon.yaml"


def load_daemon_config(path: str | Path | None, folders: list[Path]) -> DaemonConfig:
    """The validated config of ``path`` (bundled default if None) with ``folders`` applied."""
    source = Path(path) if path is not None else BUNDLED_CONFIG
    config = load_config(source, DaemonConfig)
    if not folders:
        return config
    if len(config.cameras) != 1:
        raise UserError(
            f"{source} defines {len(config.cameras)} cameras; give their folders in "
            "the config instead of on the command line."
        )
    only = config.cameras[0]
    folders = [folder.expanduser().absolute() for folder in folders]
    if len(folders) == 1:
        cameras = [CameraConfig(name=only.name, path=folders[0], profile=only.profile)]
    else:
        names = [folder.name or "root" for folder in folders]
        if len(set(names)) != len(names):
            raise UserError(
                "the camera folders given share a name; use --config to name each "
                "camera explicitly."
            )
        cameras = [
            CameraConfig(name=name, path=folder, profile=only.profile)
            for name, folder in zip(names, folders, strict=True)
        ]
    return config.model_copy(update={"cameras": cameras})
