"""What ``watch`` opens before torch loads, handed to the daemon whole so that nothing is
opened twice: the line's folders, each camera's profile with its threshold, and the
digest of each ``profile.yaml`` taken before it was read.

``watch`` opens these first so that a typo or an uncalibrated profile costs a second and
leaves no database behind; the daemon then starts on exactly what was checked, rather
than resolving the folders and reading every profile again.
"""

from __future__ import annotations

from dataclasses import dataclass

from padformer_edge.daemon.inspectors import open_profile
from padformer_edge.daemon.layout import Layout, resolve_layout
from padformer_edge.daemon.reload import file_digest
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.profiles.profile import Profile


@dataclass(frozen=True)
class OpenedLine:
    """A line's folders and profiles, checked and read once."""

    layout: Layout
    profiles: dict[str, tuple[Profile, float]]
    """Each profile the cameras name, with its threshold, by name."""
    digests: dict[str, str | None]
    """Each profile file's digest, taken before it was read: a change made meanwhile is
    seen by the reloader's first check rather than missed."""


def open_line(config: DaemonConfig, layout: Layout | None = None) -> OpenedLine:
    """Open every profile ``config``'s cameras name (a ``UserError`` for one that is
    missing, invalid or uncalibrated) in ``layout``, resolved here when not given."""
    layout = resolve_layout(config) if layout is None else layout
    names = sorted({cam.profile for cam in config.cameras})
    digests = {name: file_digest(layout.profiles / name / PROFILE_FILE) for name in names}
    profiles = {name: open_profile(layout.profiles, name) for name in names}
    return OpenedLine(layout, profiles, digests)
