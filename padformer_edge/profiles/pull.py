"""A published profile version, fetched onto a line and installed, every hash checked.

The line's daemon calls ``pull_version`` for each version assigned to its line
(``daemon.assignments``); ``watch`` calls it once at start, so a line PC with an empty
profiles folder runs what it is assigned. The files are written into a staging folder
beside the profiles (``.NAME.pulling``, which the profile list ignores). Before a byte of
them is fetched, every path the database lists must be a plain path inside the profile
folder (no absolute path, no empty, ``.`` or ``..`` part: ``references//srv/x.png`` is
refused, not collapsed) and every file's stored size the one recorded at publish. Then
``profile.yaml`` alone is fetched: it must be the version asked for, name exactly the
files listed (each field that names a file a plain name inside the folder), with the
sha256 each is listed with, and give the metric, runtime, model, comparator and threshold
recorded at publish. Only then are the other files fetched, each one's sha256
recomputed; an extra or oversized file is refused without being downloaded. Only a
version whose every check passes is installed (``versions.install_staged``, the order a
running daemon relies on); anything else is refused with one sentence and the profile
folder is not touched, so the daemon keeps scoring with the version it had. No torch,
no numpy: a torch-free line install pulls and runs an exported version.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

from sqlalchemy import Connection

from padformer_edge.config import load_config
from padformer_edge.errors import UserError
from padformer_edge.files.atomic import write_atomic
from padformer_edge.profiles.layout import PROFILE_FILE, check_name
from padformer_edge.profiles.profile import Profile, load_profile
from padformer_edge.profiles.publish import file_paths, version_identity
from padformer_edge.profiles.schema import ProfileConfig
from padformer_edge.profiles.versions import install_staged
from padformer_edge.store.published import (
    PublishedFile,
    PublishedVersion,
    file_content,
    published_version,
    version_files,
)

REPUBLISH = "publish a sound version from the workstation and assign it"


def _installed_sha(folder: Path) -> str | None:
    try:
        return hashlib.sha256((folder / PROFILE_FILE).read_bytes()).hexdigest()
    except OSError:
        return None


def _check_path(relative: str, what: str) -> None:
    """Refuse a path that is not already a plain relative path inside the profile folder.
    Checked on the text itself, part by part: ``PurePosixPath`` would collapse ``a//b``
    to ``a/b`` and hide an absolute path joined behind a folder name."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts) or "\\" in relative or "\0" in relative:
        raise UserError(f"{what} names the file '{relative}', which is not a plain path "
                        f"inside the profile folder; {REPUBLISH}.")  # fmt: skip


def _check_file_name(value: str, field: str, what: str) -> None:
    """Refuse a ``profile.yaml`` field meant to hold one file or folder name (a reference,
    the exported folder) that holds a path instead."""
    if value in ("", ".", "..") or "/" in value or "\\" in value or "\0" in value:
        raise UserError(f"{what}: its profile.yaml gives {field} as '{value}', which is not "
                        f"a plain name inside the profile folder; {REPUBLISH}.")  # fmt: skip


def _check_listed(entry: PublishedFile, what: str) -> None:
    """A listed file's path is plain and the database holds as many bytes of it as were
    recorded at publish: checked before anything is downloaded."""
    _check_path(entry.path, what)
    if entry.stored_bytes != entry.size_bytes:
        raise UserError(
            f"{what}: {entry.path} holds {entry.stored_bytes} bytes where {entry.size_bytes} "
            f"were recorded when it was published, so the version is refused unread; "
            f"{REPUBLISH}."
        )


def _fetch(conn: Connection, published_id: int, entry: PublishedFile, staging: Path,
           what: str) -> None:  # fmt: skip
    """Download one file into ``staging``, its sha256 checked against the recorded one."""
    content = file_content(conn, published_id, entry.path)
    actual = hashlib.sha256(content).hexdigest()
    if actual != entry.sha256:
        raise UserError(
            f"{what}: {entry.path} does not match the sha256 recorded when it was "
            f"published ({entry.sha256[:12]}..., the stored bytes have "
            f"{actual[:12]}...), so the version is refused; {REPUBLISH}."
        )
    write_atomic(staging / entry.path, content)


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
    for entry in files.values():
        _check_listed(entry, what)
    if PROFILE_FILE not in files:
        raise UserError(f"{what} holds no {PROFILE_FILE}; {REPUBLISH}.")
    if _installed_sha(folder) == files[PROFILE_FILE].sha256:
        return None
    staging = root / f".{name}.pulling"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        _fetch(conn, published.id, files[PROFILE_FILE], staging, what)
        config = load_config(staging / PROFILE_FILE, ProfileConfig)
        if config.name != name or config.version != version:
            raise UserError(f"{what} holds the profile.yaml of version {config.version} of "
                            f"'{config.name}'; {REPUBLISH}.")  # fmt: skip
        _check_complete(config, files, what)
        _check_identity(Profile(staging, config), published, what)
        for entry in files.values():
            if entry.path != PROFILE_FILE:
                _fetch(conn, published.id, entry, staging, what)
        if (folder / PROFILE_FILE).is_file():
            return install_staged(load_profile(root, name), staging)
        staging.rename(folder)
        return load_profile(root, name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _check_identity(staged: Profile, published: PublishedVersion, what: str) -> None:
    """The pulled ``profile.yaml`` scores as the version was recorded at publish: the same
    metric, runtime, model, comparator and threshold (``publish.version_identity``)."""
    if staged.threshold is None:
        raise UserError(f"{what}: its profile.yaml holds no threshold, though one was "
                        f"recorded when it was published; {REPUBLISH}.")  # fmt: skip
    for field, value in version_identity(staged).items():
        recorded = getattr(published, field)
        if value != recorded:
            raise UserError(
                f"{what}: its profile.yaml gives {field} {value!r} where {recorded!r} was "
                f"recorded when it was published, so the version is refused; {REPUBLISH}."
            )


def _check_complete(config: ProfileConfig, files: dict, what: str) -> None:
    """The version's files are exactly those its profile.yaml names, each with the
    sha256 profile.yaml records for it, and each field naming a file a plain name."""
    for index, entry in enumerate(config.references):
        _check_file_name(entry.file, f"references[{index}].file", what)
    if config.exported is not None:
        _check_file_name(config.exported.folder, "exported.folder", what)
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
