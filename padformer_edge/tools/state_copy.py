"""``state backup`` and ``state restore``: the whole state folder copied out and back in.

The state folder holds what a line has learnt and recorded: the history database, the
profiles (references, exported graphs, caches) and the heatmaps, and the camera
folders when the daemon config names them relative to it. Every path the history and
the profiles record under it is relative (``store.locations.stored_path``), so a copy
placed anywhere, on this PC or another, is a working state folder once
``PADFORMER_EDGE_STATE_DIR`` (or systemd's ``StateDirectory=``) names it.

A backup is a plain folder: every file, a manifest (``padformer-edge-state.json``) with
each file's size and sha256, and the database copied with SQLite's online backup API, so
the daemon may keep running while it is taken. The manifest is written last: a folder
without it is not a backup. A restore copies into a hidden sibling of the state folder,
checks every file against the manifest as it goes, and only then moves the result into
place; a damaged backup leaves the target as it was.

Files are copied as the state holds them; a ``profile.yaml`` that still names its
checkpoint by an absolute path inside the state folder (written before paths were
recorded relative) is made relative in the copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

from padformer_edge.errors import UserError
from padformer_edge.files.atomic import fsync_directory, write_atomic
from padformer_edge.profiles.layout import PROFILE_FILE, profiles_root
from padformer_edge.store.locations import state_dir, stored_path

MANIFEST = "padformer-edge-state.json"
FORMAT = 1
CHUNK = 1 << 20
# The live database's companions, locks and temporaries of writes in progress: never state.
SKIPPED_SUFFIXES = ("-wal", "-shm", "-journal", ".lock", ".tmp")


@dataclass
class CopyReport:
    """What a backup or restore copied, and what a person should know about it."""

    folder: Path
    files: int = 0
    bytes: int = 0
    database: str | None = None
    notes: list[str] = field(default_factory=list)


def _copy_hashed(source: Path, target: Path) -> tuple[int, str]:
    """Copy one file, returning its size and sha256, read once; the copy is synced."""
    digest, size = hashlib.sha256(), 0
    target.parent.mkdir(parents=True, exist_ok=True)
    with source.open("rb") as src, target.open("wb") as dst:
        while chunk := src.read(CHUNK):
            digest.update(chunk)
            dst.write(chunk)
            size += len(chunk)
        dst.flush()
        os.fsync(dst.fileno())
    shutil.copystat(source, target)
    return size, digest.hexdigest()


def _portable_profile(text: bytes, state: Path) -> bytes:
    """``profile.yaml`` with an absolute checkpoint path inside ``state`` made relative."""
    data = yaml.safe_load(text)
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or not isinstance(model.get("path"), str):
        return text
    relative = stored_path(model["path"], state)
    if relative == model["path"]:
        return text
    model["path"] = relative
    dumped = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
    return dumped.encode("utf-8")


def _empty_or_absent(folder: Path, what: str, fix: str) -> None:
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise UserError(f"{what} {folder} is not an empty folder; {fix}.")


def _staging(final: Path) -> Path:
    """A hidden sibling of ``final``: the same file system, so the last step is renames."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.partial-", dir=final.parent))


def _into_place(staging: Path, final: Path) -> None:
    """Move a finished copy onto ``final`` (absent, or an empty folder such as the one
    systemd's ``StateDirectory=`` makes), then forget the staging folder."""
    if not final.exists():
        staging.rename(final)
    else:
        for entry in staging.iterdir():
            entry.rename(final / entry.name)
        staging.rmdir()
    fsync_directory(final.parent)


def _state_files(state: Path, skip: set[Path]) -> list[Path]:
    """Every regular file under ``state`` but the database's own and temporaries; hidden
    folders (a profile being created, a copy in progress) are work, not state."""
    found = []
    for folder, dirs, files in os.walk(state):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(files):
            path = Path(folder) / name
            if path in skip or name.endswith(SKIPPED_SUFFIXES) or name == MANIFEST:
                continue
            if path.is_symlink() or not path.is_file():
                continue
            found.append(path)
    return found


def back_up_state(destination: Path, db: str | None = None) -> CopyReport:
    """Copy the state folder into ``destination`` (absent or empty), the SQLite history
    through the online backup API. The database must be at this version's schema, the
    one whose paths are relative; a PostgreSQL history stays on its server."""
    from padformer_edge.store.engine import describe, resolve_url, sqlite_path
    from padformer_edge.store.migrations import backup, open_checked

    state = state_dir().expanduser().absolute()
    destination = destination.expanduser().absolute()
    if not state.is_dir():
        raise UserError(
            f"there is no state folder at {state}; set PADFORMER_EDGE_STATE_DIR to the "
            "folder the daemon uses."
        )
    if destination.is_relative_to(state) or state.is_relative_to(destination):
        raise UserError(
            f"the backup folder {destination} and the state folder {state} contain one "
            "another; back up to a folder outside the state folder."
        )
    _empty_or_absent(destination, "the backup folder", "give a new or empty folder")
    url = resolve_url(db)
    report = CopyReport(destination)
    database_file = sqlite_path(url)
    skip: set[Path] = set()
    if database_file is None:
        report.notes.append(
            f"the history is in PostgreSQL ({describe(url)}) and is not in this backup; "
            "back it up with pg_dump"
        )
    elif Path(stored_path(database_file, state)).is_absolute():
        raise UserError(
            f"the database {database_file} lies outside the state folder {state}; move it "
            "into the state folder (the default place) or copy it with `padformer-edge db "
            "backup`, then back up the state."
        )
    root = profiles_root()
    if Path(stored_path(root, state)).is_absolute() and root.is_dir():
        report.notes.append(
            f"the profiles in {root} lie outside the state folder and are not in this backup"
        )
    staging = _staging(destination)
    try:
        manifest: dict[str, dict[str, int | str]] = {}
        if database_file is not None:
            engine = open_checked(db)
            try:
                relative = stored_path(database_file, state)
                skip.add(database_file.absolute())
                saved = backup(engine, staging / relative)
            finally:
                engine.dispose()
            report.database = relative
            manifest[relative] = _entry(saved)
        for path in _state_files(state, skip):
            relative = path.relative_to(state).as_posix()
            if path.name == PROFILE_FILE:
                data = _portable_profile(path.read_bytes(), state)
                write_atomic(staging / relative, data)
                manifest[relative] = _entry(staging / relative)
                continue
            try:
                size, sha = _copy_hashed(path, staging / relative)
            except FileNotFoundError:  # pruned while the backup ran: no longer state
                continue
            manifest[relative] = {"size": size, "sha256": sha}
        record = {
            "format": FORMAT,
            "made_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "source": str(state),
            "database": report.database,
            "files": manifest,
        }
        write_atomic(staging / MANIFEST, json.dumps(record, indent=1).encode("utf-8"))
        _into_place(staging, destination)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    report.files = len(manifest)
    report.bytes = sum(int(e["size"]) for e in manifest.values())
    return report


def _entry(path: Path) -> dict[str, int | str]:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return {"size": path.stat().st_size, "sha256": digest.hexdigest()}


def read_manifest(source: Path) -> dict:
    """The manifest of the backup in ``source``, or one sentence saying it is none."""
    path = source / MANIFEST
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(
            f"{source} is not a state backup (it has no {MANIFEST}); give a folder made by "
            "`padformer-edge state backup`."
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise UserError(
            f"{path} cannot be read ({err}); the backup is damaged, restore another."
        ) from None
    made = record.get("format") if isinstance(record, dict) else None
    if made != FORMAT or not isinstance(record.get("files"), dict):
        raise UserError(
            f"{path} is not a state backup of format {FORMAT}, the one this version reads "
            f"(it says {made!r}); restore it with the version that made it."
        )
    return record


def restore_state(source: Path) -> CopyReport:
    """Copy the backup in ``source`` into the state folder, which must be absent or
    empty; every file is checked against the manifest before anything is moved in."""
    source = source.expanduser().absolute()
    record = read_manifest(source)
    state = state_dir().expanduser().absolute()
    _empty_or_absent(
        state,
        "the state folder",
        "restore into an empty folder (set PADFORMER_EDGE_STATE_DIR) or move its files "
        "away first; nothing was changed",
    )
    report = CopyReport(state, database=record.get("database"))
    staging = _staging(state)
    try:
        for relative, expected in sorted(record["files"].items()):
            path = source / relative
            if Path(relative).is_absolute() or ".." in Path(relative).parts:
                raise UserError(
                    f"the backup in {source} names {relative}, outside the backup; the "
                    "manifest is damaged, restore another backup; nothing was changed."
                )
            if not path.is_file():
                raise UserError(
                    f"backup file {path} is missing; the backup is incomplete, restore "
                    "another; nothing was changed."
                )
            size, sha = _copy_hashed(path, staging / relative)
            if sha != expected["sha256"] or size != expected["size"]:
                raise UserError(
                    f"backup file {path} differs from the sha256 its manifest records; the "
                    "backup is damaged, restore another; nothing was changed."
                )
            report.files += 1
            report.bytes += size
        _into_place(staging, state)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return report
