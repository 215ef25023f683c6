"""Whole-or-nothing file writes: the one path heatmaps, profiles, caches, checkpoints,
resume points, database backups and exports all take.

A reader (an operator's viewer, a sync job, the daemon after a power cut) must never see
half a file: data goes to a temporary sibling that is synced and then moved into place
by ``os.replace`` in one step, on the same file system. The rename itself lives in the
folder's own metadata, so the folder is synced too; without that a power cut can undo
the rename after the database already committed a row naming the file. Writes made in
a batch may leave their folders to one sync at the batch's end, before that commit
(``folder_syncs_deferred``).
"""

from __future__ import annotations

import errno
import os
import secrets
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from padformer_edge.errors import UserError


def fsync_file(path: Path) -> None:
    """Flush ``path``'s data to the disk (any descriptor of the file will do)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_directory(folder: Path) -> None:
    """Make the entries of ``folder`` (a rename into it) survive a power cut.

    Platforms without directory descriptors (Windows) and file systems that refuse to
    sync one (``EINVAL``) have no such step to take; there the rename is all there is.
    """
    flag = getattr(os, "O_DIRECTORY", None)
    if flag is None:
        return
    fd = os.open(folder, os.O_RDONLY | flag)
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno != errno.EINVAL:
            raise
    finally:
        os.close(fd)


_FOLDERS_LEFT: ContextVar[set[Path] | None] = ContextVar("folders_left_to_sync", default=None)


@contextmanager
def folder_syncs_deferred(folders: set[Path]) -> Iterator[None]:
    """Within it, the calling thread's atomic writes sync each file and rename it into
    place as always, but add its folder to ``folders`` instead of syncing it.

    The daemon writes a batch of heatmaps into one shard folder: a folder sync per file
    is a journal commit each, where one for the whole batch, made before the transaction
    that records the files (``sync_folders``), makes every rename as durable. The caller
    must sync ``folders`` before anything relies on the renames surviving a power cut.
    A context variable, so each host thread defers only its own writes."""
    token = _FOLDERS_LEFT.set(folders)
    try:
        yield
    finally:
        _FOLDERS_LEFT.reset(token)


def sync_folders(folders: Iterable[Path]) -> None:
    """``fsync_directory`` of each folder once: the deferred half of atomic writes."""
    for folder in sorted(set(folders)):
        fsync_directory(folder)


def _temporary(path: Path) -> Path:
    """A fresh temporary sibling of ``path`` (the leftovers' pattern the daemon cleans)."""
    return path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")


def _folder_written(folder: Path) -> None:
    """Sync ``folder`` after a rename into it, or leave it to the batch's one sync
    (``folder_syncs_deferred``)."""
    deferred = _FOLDERS_LEFT.get()
    if deferred is None:
        fsync_directory(folder)
    else:  # the caller syncs it once for a batch (folder_syncs_deferred)
        deferred.add(folder)


def _make_folder(folder: Path, fix: str) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UserError(f"cannot write into {folder} ({err.strerror}); {fix}.") from err


@contextmanager
def atomic_path(path: str | Path, *, fix: str = "check its permissions") -> Iterator[Path]:
    """Yield a fresh temporary sibling of ``path`` for any writer (OpenCV, safetensors,
    ``torch.save``, SQLite); on a normal exit it is synced, renamed onto ``path`` and the
    folder synced. On an exception it is removed and ``path`` is left as it was.

    A folder that cannot be created is a ``UserError`` whose sentence ends with ``fix``.
    """
    path = Path(path)
    _make_folder(path.parent, fix)
    tmp = _temporary(path)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _folder_written(path.parent)


def write_atomic(path: str | Path, data: bytes, *, fix: str = "check its permissions") -> Path:
    """Write ``data`` to ``path`` atomically; an unwritable folder is a ``UserError``.

    ``fix`` completes the error sentence with what the caller's user should do. The file
    gets the usual permissions (0666 less the umask), as a plain ``open`` would give.
    ``atomic_path``'s steps for bytes in hand, with fewer system calls (the daemon writes
    one heatmap per image this way): the data is synced through the descriptor that
    wrote it, and the folder is made only when the temporary file cannot be created
    for want of it.
    """
    path = Path(path)
    tmp = _temporary(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    try:
        try:
            fd = os.open(tmp, flags, 0o666)
        except FileNotFoundError:  # the folder is not there yet
            _make_folder(path.parent, fix)
            fd = os.open(tmp, flags, 0o666)
    except OSError as err:
        raise UserError(f"cannot write into {path.parent} ({err.strerror}); {fix}.") from err
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _folder_written(path.parent)
    return path
