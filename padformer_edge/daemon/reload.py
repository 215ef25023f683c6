"""Taking up a new profile version without a restart.

A thread polls each served profile's ``profile.yaml`` every
``profile_check_interval_s`` (default 2 s) and compares its sha256 with the one the
running inspector was built from. Polling, not a second watchdog observer, because:
the file is small, so hashing it is a few microseconds of work per profile; a profile
change is ``os.replace`` of that one file (``profiles.versions.install``), which a poll
sees whatever the file system (a network share delivers no events, and an event on a
replaced folder can be lost); and a 2 s delay is nothing against a change an engineer
makes a few times a month. It also needs no observer of its own to supervise.

On a change the new inspector is built and warmed on this thread, so the worker keeps
scoring with the old one meanwhile (two detectors are in memory for that moment); then
``Worker.use_inspector`` swaps it in for every camera of the profile at once. Images
still queued are scored by whichever version is current when their batch is, and each
result row names that version. A version that fails to load (broken YAML, a missing
reference, no threshold) is logged once as an error naming the profile and the fix;
the old version keeps scoring, and the file is tried again when it changes, or every
``RETRY_FAILED_S`` (a reference put back does not change ``profile.yaml``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from padformer_edge.daemon.inspectors import Inspector, build_inspector, open_profile
from padformer_edge.daemon.settings import WorkerConfig
from padformer_edge.profiles.layout import PROFILE_FILE
from padformer_edge.reporting.log import get_logger

log = get_logger("daemon")

RETRY_FAILED_S = 30.0
"""How often a profile.yaml that failed to load is tried again while it stays the same."""


def file_digest(path: Path) -> str | None:
    """sha256 of ``path``'s bytes; None when it cannot be read (gone, mid-rename)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class Served:
    """What the daemon serves for one profile, and the last file it failed to load."""

    digest: str | None
    inspector: Inspector
    failed_digest: str | None = None
    failed_at: float = 0.0
    failed_error: str = ""


Swap = Callable[[str, Inspector], None]
"""Installs a profile's new inspector for every camera using it (``Worker.use_inspector``)."""


class ProfileReloader:
    """Polls the served profiles; builds and swaps in each new version it finds."""

    def __init__(self, root: Path, worker: WorkerConfig, interval_s: float) -> None:
        self.root, self.worker, self.interval_s = root, worker, interval_s
        self.served: dict[str, Served] = {}
        self.swap: Swap = lambda _name, _inspector: None
        self.reloads = 0
        self._wake = threading.Event()

    def path(self, name: str) -> Path:
        return self.root / name / PROFILE_FILE

    def build(self, name: str) -> tuple[str | None, Inspector]:
        """Open, build and warm profile ``name``; the digest is taken before the file is
        read, so a change made while building is seen by the next check."""
        digest = file_digest(self.path(name))
        profile, threshold = open_profile(self.root, name)
        inspector = build_inspector(
            profile, threshold, self.worker.device, self.worker.runtime, self.worker.max_batch
        )
        return digest, inspector

    def serve(self, name: str, digest: str | None, inspector: Inspector) -> None:
        """Record what start-up built for ``name`` (the baseline for later checks)."""
        self.served[name] = Served(digest, inspector)

    def run(self, stop: threading.Event) -> None:
        """Check every ``interval_s``, or at once when woken, until ``stop``; one
        profile's failure never ends it."""
        while not stop.is_set():
            self._wake.wait(self.interval_s)
            self._wake.clear()
            if stop.is_set():
                return
            self.check_all()

    def wake(self) -> None:
        """Check now rather than at the next interval: a version was just installed
        (``daemon.assignments``), and it should be scoring without the wait."""
        self._wake.set()

    def check_all(self) -> None:
        for name in sorted(self.served):
            try:
                self.check(name)
            except Exception as err:  # a bug here must not end hot reload for the others
                log.error("daemon.profile_check_failed", profile=name,
                          error=f"{type(err).__name__}: {err}")  # fmt: skip

    def check(self, name: str) -> bool:
        """Take up a changed ``profile.yaml`` of ``name``; True when a new one is in."""
        served = self.served[name]
        digest = file_digest(self.path(name))
        if digest == served.digest:
            return False
        retry_due = time.monotonic() - served.failed_at >= RETRY_FAILED_S
        if digest is not None and digest == served.failed_digest and not retry_due:
            return False
        old = served.inspector
        try:
            if digest is None:
                self.open_missing(name)
            built_digest, new = self.build(name)
        except Exception as err:
            self.failed(name, served, digest, err)
            return False
        self.swap(name, new)
        self.served[name] = Served(built_digest, new)
        self.reloads += 1
        log.info(
            "daemon.profile_reloaded", profile=name, old_version=old.version,
            new_version=new.version, old_threshold=old.threshold, new_threshold=new.threshold,
        )  # fmt: skip
        if new.version == old.version and new.threshold != old.threshold:
            log.warning(
                "daemon.profile_version_unchanged", profile=name, version=new.version,
                fix="raise `version` in profile.yaml whenever its threshold or references "
                "change (every padformer-edge profile command does), so results name the "
                "version that scored them",
            )  # fmt: skip
        return True

    def open_missing(self, name: str) -> None:
        """Raise the loader's own sentence for a profile.yaml that cannot be read."""
        open_profile(self.root, name)
        raise OSError(f"{self.path(name)} cannot be read")

    def failed(self, name: str, served: Served, digest: str | None, err: Exception) -> None:
        """Log a failed load once per file content and error; the old version stays."""
        error = str(err) if err.args else type(err).__name__
        repeated = digest == served.failed_digest and error == served.failed_error
        served.failed_digest, served.failed_at, served.failed_error = (
            digest, time.monotonic(), error,
        )  # fmt: skip
        if repeated:
            return
        log.error(
            "daemon.profile_reload_failed", profile=name, running_version=served.inspector.version,
            error=error,
            fix=f"the daemon keeps scoring with version {served.inspector.version} of profile "
            f"'{name}'; correct {self.path(name)} (or roll back with `padformer-edge profile "
            f"rollback {name} --yes ENGINEER`) and it is taken up within "
            f"{self.interval_s:g} s, no restart needed",
        )  # fmt: skip
