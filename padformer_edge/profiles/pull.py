"""A published profile version, fetched onto a line and installed, every hash checked.

The line's daemon calls ``pull_version`` for each version assigned to its line
(``daemon.assignments``); ``watch`` calls it once at start, so a line PC with an empty
profiles folder runs what it is assigned. The files are written into a staging folder
beside the profiles (``.NAME.pulling``, which the profile list ignores), each one's
sha256 recomputed and compared with the one recorded when it was published, and with
the one the version's own ``profile.yaml`` records. Only a version whose every file
matches is installed (``versions.install_staged``, the order a running daemon relies
on); anything else is refused with one sentence and the profile folder is not touched,
so the daemon keeps scoring with the version it had. No torch, no numpy: a torch-free
line install pulls and runs an exported version.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path, PurePosixPath

from sqlalchemy import Connection

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.profiles.layout import PROFILE_FILE, check_name
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.publish import file_paths
from padformer_edge.profiles.schema import ProfileConfig
from padformer_edge.profiles.versions import install_staged
from padformer_edge.store.published import file_content, published_version, version_files

REPUBLISH = "publish a sound version from the workstation and assign it"


def _installed_sha(folder: Path) -> str | None:
    try:
        return hashlib.sha256((folder / PROFILE_FILE).read_bytes()).hexdigest()
    except OSError:
        return None


def _check_path(relative: str, what: str) -> None:
    """Refuse a path that could land outside the profile folder."""
    parts = PurePosixPath(relative).parts
    if (
        not parts
        or PurePosixPath(relative).is_absolute()
        or "\\" in relative
        or any(part in ("", ".", "..") for part in parts)
    ):
        raise UserError(f"{what} names the file '{relative}', which is not a plain path "
                        f"inside the profile folder; {REPUBLISH}.")  # fmt: skip


def pull_version(conn: Connection, root: str | Path, name: str, version: int) -> Profile | None:
    """Install published ``version`` of profile ``name`` under ``root``; None when the
    profile folder already holds exactly that version's ``profile.yaml``."""
    root = Path(root)
    folder = root / check_name(name)
    what = f"version {version} of profile '{name}' in the database"
    published = published_version(conn, name, version)
    if published is None:
        raise UserError(f"{what} does not exist (it was assigned, then removed); "
                        f"{REPUBLISH}.")  # fmt: skip
    files = {f.path: f for f in version_files(conn, published.id)}
    if PROFILE_FILE not in files:
        raise UserError(f"{what} holds no {PROFILE_FILE}; {REPUBLISH}.")
    if _installed_sha(folder) == files[PROFILE_FILE].sha256:
        return None
    staging = root / f".{name}.pulling"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        for entry in files.values():
            _check_path(entry.path, what)
            content = file_content(conn, published.id, entry.path)
            actual = hashlib.sha256(content).hexdigest()
            if actual != entry.sha256:
                raise UserError(
                    f"{what}: {entry.path} does not match the sha256 recorded when it was "
                    f"published ({entry.sha256[:12]}..., the stored bytes have "
                    f"{actual[:12]}...), so the version is refused; {REPUBLISH}."
                )
            write_atomic(staging / entry.path, content)
        config = load_config(staging / PROFILE_FILE, ProfileConfig)
        _check_complete(config, files, what)
        if config.name != name or config.version != version:
            raise UserError(f"{what} holds the profile.yaml of version {config.version} of "
                            f"'{config.name}'; {REPUBLISH}.")  # fmt: skip
        if (folder / PROFILE_FILE).is_file():
            return install_staged(load_profile(root, name), staging)
        staging.rename(folder)
        return load_profile(root, name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_complete(config: ProfileConfig, files: dict, what: str) -> None:
    """The version's files are exactly those its profile.yaml names, each with the
    sha256 profile.yaml records for it."""
    expected = file_paths(config)
    for relative in expected:
        _check_path(relative, what)
    if set(expected) != set(files):
        missing = sorted(set(expected) - set(files))
        extra = sorted(set(files) - set(expected))
        raise UserError(
            f"{what} does not hold the files its profile.yaml names (missing: "
            f"{', '.join(missing) or 'none'}; not named: {', '.join(extra) or 'none'}); "
            f"{REPUBLISH}."
        )
    for relative, recorded in expected.items():
        if recorded is not None and files[relative].sha256 != recorded:
            raise UserError(
                f"{what}: {relative} was published with another sha256 than its "
                f"profile.yaml records; {REPUBLISH}."
            )
