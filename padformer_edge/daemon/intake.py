"""Discovery: turn camera files into ``pending`` rows once they are completely written.

Filesystem events are only hints. Close-write events say a file is probably done,
created/modified events that it may soon be; either way the path goes into a settling
set, and a file leaves it for the queue only when its size has stopped changing for
``stable_ms`` and its format trailer is present (or, for a file that never completes,
after ``settle_timeout_s``, so that the worker records it as truncated instead of it
lingering forever). A file that arrives by rename (a camera that writes ``x.png.part``,
or into another folder, and renames it into place) is complete the moment it appears: a
rename is atomic, so it is queued at once once its trailer is there, without waiting
``stable_ms``, and the intake thread is woken for it instead of waiting for its next
tick. A created/modified/closed event on such a path afterwards (someone writing into it
in place) puts it back under the stability rule. A reconciliation scan on start and
every ``rescan_interval_s`` offers whatever the events missed: files written while the
daemon was down, inotify overflow, a network share whose events never arrive.
``enqueue`` is idempotent on (path, sha256), so a file offered twice is still one row.

One odd entry never costs the others. A name that is not valid UTF-8 cannot be stored
as text: it gets a ``failed`` row under its name with ``\\x`` escapes and a reason. A
FIFO, socket or device named like a camera file is queued and refused by the worker
(never opened), a folder named like an image is logged, and any error on one entry is
logged once for that entry while the scan goes on to the next.
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import Engine, exists, select
from watchdog.events import (
    DirCreatedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from padformer_edge.daemon.camera_files import fingerprint, ignored, looks_complete
from padformer_edge.daemon.settings import IntakeConfig
from padformer_edge.images.decode import IMAGE_SUFFIXES
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import reading
from padformer_edge.store.lines import line_of
from padformer_edge.store.locations import stored_path
from padformer_edge.store.models import Inspection
from padformer_edge.store.queue import QueuedFile, enqueue_ids

log = get_logger("intake")

REPORTED_LIMIT = 10_000  # distinct (path, problem) pairs remembered for log-once
NOT_UTF8 = (
    "the file name is not valid UTF-8 (stored here with \\x escapes); cameras must write "
    "UTF-8 names: rename the file to inspect it"
)


def stored_name(path: Path, folders: dict[Path, str] | None = None) -> tuple[str, bool]:
    """The text a row stores for ``path`` and whether it is the exact name.

    A file under the state folder is recorded relative to it (``stored_path``), so a
    moved state folder keeps its camera folders inside it. Python keeps undecodable name
    bytes as lone surrogates, which no database accepts; such a name is stored with
    ``\\xNN`` escapes instead (and cannot be opened from it).

    ``folders`` (folder -> its stored form) lets a caller that names many files of a few
    folders (intake's step) resolve each folder once: ``stored_path`` resolves every
    folder of the path, which cost more than the rest of queueing a file.
    """
    if folders is None:
        recorded = stored_path(path)
    else:
        folder = path.parent
        if folder not in folders:  # the folder's form, as ``stored_path`` makes it
            folders[folder] = stored_path(folder / "x")[: -len("x")]
        recorded = folders[folder] + path.name
    raw = os.fsencode(recorded)
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), False


def file_key(path: Path, info: os.stat_result) -> int:
    """One small integer for (path, size, modification time): what ``Intake.known``
    remembers of each recorded file that is still in a camera folder.

    A line that never empties its camera folders keeps every file there, so the set
    holds one entry per image ever inspected; a (Path, size, mtime) tuple cost about
    600 bytes of Python objects, most of the 1 KiB per image the daemon may grow by
    (``benchmarks/soak.py``), an integer and its set slot about a hundred. With 64
    bits, the chance that any two of a million files share a key is about 3 in 100
    million, and a shared key would only make a scan skip a file whose filesystem event
    was missed as well.
    """
    digest = hashlib.blake2b(digest_size=8)
    digest.update(os.fsencode(path))
    digest.update(info.st_size.to_bytes(8, "little", signed=True))
    digest.update(info.st_mtime_ns.to_bytes(12, "little", signed=True))
    return int.from_bytes(digest.digest(), "little")


@dataclass(frozen=True)
class Camera:
    """A watched folder, resolved once, and the product its images belong to."""

    name: str
    root: Path
    product: str


@dataclass
class Settling:
    camera: Camera
    size: int
    changed_at: float
    renamed: bool = False
    """It arrived by rename (complete when it appeared) and nothing wrote to it since."""


class Arrival:
    """Why a file left the settling set for the queue: what ``Intake.arrivals`` counts
    and the ``intake.queued`` log line names."""

    RENAMED = "renamed"  # moved into place whole, taken once its trailer was there
    SETTLED = "settled"  # written in place, its size stable for stable_ms with its trailer
    TIMED_OUT = "timed_out"  # never looked complete within settle_timeout_s
    SPECIAL = "special"  # a link, FIFO, socket or device: recorded and refused unread


@dataclass(frozen=True)
class Found:
    """A settled file, hashed, with the row it is queued as."""

    path: Path
    camera: Camera
    info: os.stat_result
    row: QueuedFile
    arrival: str


def full_event_observer() -> BaseObserver:
    """The platform's observer; on Linux (inotify) one that reports a file moved in from
    an unwatched folder as a move with no source instead of as a creation."""
    try:
        from watchdog.observers.inotify import InotifyObserver
    except ImportError:  # not Linux: the platform's own observer, moves within a folder
        return Observer()
    return InotifyObserver(generate_full_events=True)


EVENTS = [
    FileCreatedEvent, FileModifiedEvent, FileClosedEvent, FileMovedEvent,
    DirCreatedEvent, DirMovedEvent,
]  # fmt: skip
"""The events ``_Events`` acts on, and the only ones the observer asks for (on Linux,
its inotify mask): without the filter every file opened or read in a camera folder is
an event as well, the daemon's own reads of each file (its trailer, its hash, its
inspection) included, each handled in Python to be ignored."""


class _Events(FileSystemEventHandler):
    """Routes every interesting event of one camera folder to ``Intake.offer``."""

    def __init__(self, intake: Intake, camera: Camera) -> None:
        self.intake, self.camera = intake, camera

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("closed", "created", "modified") and not event.is_directory:
            self.intake.offer(Path(os.fsdecode(event.src_path)), self.camera)
        elif event.event_type == "moved":
            if not event.dest_path:
                return  # moved out of the watched folders: nothing to inspect
            target = Path(os.fsdecode(event.dest_path))
            if event.is_directory:
                self.intake.request_scan()  # a whole folder moved in: walk it
            else:
                self.intake.offer(target, self.camera, renamed=True)
        elif event.event_type == "created" and event.is_directory:
            self.intake.request_scan()


class Intake:
    """The observer, the settling set and the scan; ``step`` is driven by one thread."""

    def __init__(
        self,
        engine: Engine,
        cameras: list[Camera],
        config: IntakeConfig,
        on_queued: Callable[[], None] = lambda: None,
    ) -> None:
        self.engine, self.cameras, self.config = engine, cameras, config
        self.on_queued = on_queued  # wakes the worker instead of it polling for rows
        self.max_bytes = int(config.max_file_mb * 1024 * 1024)
        self.settling: dict[Path, Settling] = {}
        self.known: set[int] = set()  # file_key of every file recorded, while present
        self.lock = threading.Lock()
        self.observer: BaseObserver | None = None
        self.observer_restarts = 0
        self.next_scan = 0.0  # scan on the first step
        self.reported: set[tuple[str, str]] = set()
        self.arrivals: Counter[str] = Counter()  # files queued, by ``Arrival``
        self.offered = threading.Event()  # a renamed file waits: step now, not next tick

    def report_once(self, event: str, path: Path, **fields: object) -> None:
        """Log ``event`` for ``path`` the first time only: a file retried every tick or
        met by every scan must not flood the journal with the same line."""
        key = (stored_name(path)[0], event)
        if key in self.reported:
            return
        if len(self.reported) >= REPORTED_LIMIT:
            self.reported.clear()
        self.reported.add(key)
        log.warning(event, path=key[0], **fields)

    # -- observer ------------------------------------------------------------------
    def start_observer(self) -> None:
        """A fresh observer on every camera folder (also used to replace a dead one).

        On Linux it reports a file moved in from outside the watched folders as a move
        (``generate_full_events``) rather than as a creation, so such a file is taken as
        renamed, not left to wait ``stable_ms`` like one written in place."""
        observer: BaseObserver = (
            PollingObserver(timeout=self.config.poll_interval_s)
            if self.config.polling
            else full_event_observer()
        )
        for camera in self.cameras:
            observer.schedule(
                _Events(self, camera), str(camera.root), recursive=self.config.recursive,
                event_filter=EVENTS,
            )  # fmt: skip
        observer.daemon = True
        observer.start()
        self.observer = observer

    def observer_alive(self) -> bool:
        return self.observer is not None and self.observer.is_alive()

    def ensure_observer(self) -> bool:
        """Restart a dead observer and rescan what it may have missed; True if restarted."""
        if self.observer_alive():
            return False
        log.warning("intake.observer_restart", restarts=self.observer_restarts)
        self.observer_restarts += 1
        self.start_observer()
        self.request_scan()
        return True

    def stop_observer(self) -> None:
        if self.observer is not None:
            self.observer.stop()
            self.observer.join(timeout=5)

    # -- settling ------------------------------------------------------------------
    def offer(self, path: Path, camera: Camera, renamed: bool = False) -> None:
        """A hint that ``path`` may be a new camera file; cheap, called from any thread.

        ``renamed``: it was moved into place, so it is complete now (a rename is atomic)
        and ``wait_for_offer`` returns at once; any other hint on the path means someone
        writes to it in place, and it waits for stability like any file."""
        if ignored(path.name, self.config.ignore):
            return
        with self.lock:
            entry = self.settling.get(path)
            if entry is None:
                self.settling[path] = Settling(camera, -1, time.monotonic(), renamed)
            else:
                entry.renamed = renamed
        if renamed:
            self.offered.set()

    def wait_for_offer(self, seconds: float) -> None:
        """The intake thread's pause between steps: ``seconds``, or until a renamed file
        (or ``wake``) wants a step now."""
        self.offered.wait(seconds)
        self.offered.clear()

    def wake(self) -> None:
        """End ``wait_for_offer`` now (the daemon is stopping)."""
        self.offered.set()

    def request_scan(self) -> None:
        self.next_scan = 0.0

    def step(self, now: float | None = None) -> int:
        """Scan if due, then queue every settled file; returns how many were queued."""
        now = time.monotonic() if now is None else now
        if now >= self.next_scan:
            self.next_scan = now + self.config.rescan_interval_s
            self.scan()
        with self.lock:
            candidates = list(self.settling.items())
        ready: list[Found] = []
        folders: dict[Path, str] = {}  # each folder's stored form, resolved once a step
        for path, entry in candidates:
            try:
                verdict = self._verdict(path, entry, now)
                if verdict is None:
                    continue
                if verdict:
                    found = self._found(path, entry.camera, verdict, folders)
                    if found is not None:
                        ready.append(found)
                        continue  # queued below, with every other file settled now
            except Exception as err:  # one odd entry (permissions, a name too long)
                self.report_once("intake.entry_failed", path, error=f"{type(err).__name__}: {err}")
            self._forget(path)
        return self._queue(ready)

    def _forget(self, path: Path) -> None:
        with self.lock:
            self.settling.pop(path, None)

    def _verdict(self, path: Path, entry: Settling, now: float) -> str | bool | None:
        """An ``Arrival`` (why): queue it; False: forget it; None: let it settle longer."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return False  # renamed away or deleted: its new name has its own event
        if stat.S_ISLNK(info.st_mode):
            return Arrival.SPECIAL  # recorded and refused by the worker, never followed
        if stat.S_ISDIR(info.st_mode):
            return False  # walked by the scan, not inspected
        if not stat.S_ISREG(info.st_mode):
            return Arrival.SPECIAL  # a FIFO, socket or device: refused, never opened
        if entry.renamed and looks_complete(path, info.st_size):
            return Arrival.RENAMED  # complete when it appeared: no stability wait
        if info.st_size != entry.size:
            entry.size, entry.changed_at = info.st_size, now
            return None
        quiet = now - entry.changed_at
        if quiet * 1000 >= self.config.stable_ms and looks_complete(path, info.st_size):
            return Arrival.SETTLED
        return Arrival.TIMED_OUT if quiet >= self.config.settle_timeout_s else None

    def _found(
        self, path: Path, camera: Camera, arrival: str, folders: dict[Path, str]
    ) -> Found | None:
        """A settled file's row to queue, hashed; None if it vanished meanwhile
        (``folders``: ``stored_name``'s, for the step)."""
        try:
            info = os.lstat(path)
            sha256, size = fingerprint(path, self.max_bytes, info)
        except OSError:
            return None  # vanished while hashing; nothing to record
        name, exact = stored_name(path, folders)
        row = QueuedFile(camera.name, camera.product, name, sha256, size,
                         refused=None if exact else NOT_UTF8)  # fmt: skip
        return Found(path, camera, info, row, arrival)

    def _queue(self, ready: list[Found]) -> int:
        """Queue ``ready`` in one transaction; if it fails, each file on its own, so one
        file the database refuses never holds the others back. A file the database
        refuses stays settling and is tried again next step. Returns how many were queued."""
        if not ready:
            return 0
        try:
            queued = list(zip(ready, enqueue_ids(self.engine, [f.row for f in ready]),
                              strict=True))  # fmt: skip
        except Exception:
            queued = []
            for found in ready:
                try:
                    queued.append((found, enqueue_ids(self.engine, [found.row])[0]))
                except Exception as err:  # a locked or unreachable database: not intake's end
                    self.report_once("intake.enqueue_failed", found.path,
                                     error=f"{type(err).__name__}: {err}")  # fmt: skip
        for found, row_id in queued:
            self.known.add(file_key(found.path, found.info))
            self.arrivals[found.arrival] += 1
            if found.row.refused is not None:
                self.report_once("intake.refused", found.path, id=row_id, reason=NOT_UTF8)
            log.debug("intake.queued", path=found.row.source_path, id=row_id,
                      camera=found.camera.name, arrival=found.arrival)  # fmt: skip
            self._forget(found.path)
        if queued:
            self.on_queued()
        return len(queued)

    # -- reconciliation --------------------------------------------------------------
    def scan(self) -> int:
        """Offer every file in the camera folders that has no row yet; returns the count."""
        offered, present = 0, set()
        for camera in self.cameras:
            for folder, dirs, files in os.walk(camera.root):
                if not self.config.recursive:
                    dirs.clear()
                dirs[:] = [d for d in dirs if not ignored(d, self.config.ignore)]
                for name in dirs:
                    self._folder_entry(Path(folder) / name)
                # A link to a folder is listed with the folders (and not followed): it is
                # offered like a file so that its refusal is recorded.
                linked = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
                for name in [*files, *linked]:
                    path = Path(folder) / name
                    if ignored(name, self.config.ignore):
                        continue
                    try:
                        unknown = self._unknown(path, present)
                    except Exception as err:  # one odd entry must not end the scan
                        self.report_once("intake.scan_entry_failed", path, error=str(err))
                        continue
                    if unknown:
                        self.offer(path, camera)
                        offered += 1
        # Forget files that are gone (cleaned up by the line), so months of running do
        # not grow this set beyond what the camera folders hold now.
        self.known &= present
        if offered:
            log.info("intake.scan", offered=offered)
        return offered

    def _folder_entry(self, path: Path) -> None:
        """A real folder named like an image is walked, not inspected: say so once."""
        if path.suffix.lower() in IMAGE_SUFFIXES and not os.path.islink(path):
            self.report_once(
                "intake.folder_not_inspected",
                path,
                reason="a folder named like an image file; only files are inspected",
            )

    def _unknown(self, path: Path, present: set[int]) -> bool:
        """No row records this path with this size since it was last modified."""
        try:
            info = os.lstat(path)
        except OSError:
            return False
        key = file_key(path, info)
        present.add(key)
        if key in self.known:
            return False
        modified = datetime.fromtimestamp(info.st_mtime, UTC)
        query = select(
            exists().where(
                Inspection.line == line_of(self.engine),  # another line's file is not ours
                Inspection.source_path == stored_name(path)[0],
                Inspection.size_bytes == info.st_size,
                Inspection.discovered_at >= modified,
            )
        )
        with reading(self.engine) as conn:
            recorded = bool(conn.execute(query).scalar())
        if recorded:
            self.known.add(key)
        return not recorded
