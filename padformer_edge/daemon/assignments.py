"""The line's side of published profiles: poll this line's assignments, pull each new
version, and have the reloader take it up at once.

A thread looks at the assignments every ``published_profiles.poll_interval_s`` (one
short query on an index). A version it has not installed yet is pulled
(``profiles.pull``: every file's sha256 checked before anything in the profiles folder
changes) and the reloader is woken, so the version is scoring within the poll interval
plus the time to build its detector, not a further ``profile_check_interval_s``. A pull
that is refused (a tampered file, a version removed) is logged once as an error naming
the version and the version the daemon keeps running, and not fetched again while that
assignment stays: a published version's files cannot change (``store.published``), so
only a new assignment (another version, a rollback) or the daemon's next start is worth
a download, and a refused version is not downloaded again at every poll.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.engine import URL

from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.profiles.profile import load_profile
from padformer_edge.profiles.pull import pull_version
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import open_engine, reading, resolve_url, sqlite_path
from padformer_edge.store.published import Assignment, assigned

log = get_logger("daemon")


def running_version(root: Path, name: str) -> str:
    """The version the profiles folder holds for ``name``, in words, for the log."""
    try:
        return str(load_profile(root, name).config.version)
    except UserError:
        return "none"


class AssignmentPoller:
    """Pulls the versions assigned to ``line`` into ``root``; ``on_pulled(name)`` after
    each version installed."""

    def __init__(self, engine: Engine, line: str, root: Path, interval_s: float,
                 on_pulled: Callable[[str], None] = lambda _name: None) -> None:  # fmt: skip
        self.engine, self.line, self.root, self.interval_s = engine, line, root, interval_s
        self.on_pulled = on_pulled
        self.settled: dict[str, int] = {}  # profile -> the assignment id installed or current
        self.refused: dict[str, int] = {}  # profile -> the assignment id refused

    def run(self, stop: threading.Event) -> None:
        """Poll every ``interval_s`` until ``stop``; a database away is logged, not fatal."""
        while not stop.wait(self.interval_s):
            try:
                self.poll()
            except Exception as err:  # the database away for a moment: next time
                log.warning("daemon.assignments_unreadable",
                            error=f"{type(err).__name__}: {err}")  # fmt: skip

    def poll(self) -> list[str]:
        """Pull every assignment of this line not yet installed; the names pulled."""
        with reading(self.engine) as conn:
            current = assigned(conn, self.line)
        pulled = []
        for assignment in current:
            done = (self.settled.get(assignment.profile), self.refused.get(assignment.profile))
            if assignment.id in done:  # installed, current, or refused: nothing to fetch
                continue
            if self.take(assignment):
                pulled.append(assignment.profile)
        return pulled

    def take(self, assignment: Assignment) -> bool:
        """Pull ``assignment``'s version; True when a new one was installed."""
        name, version = assignment.profile, assignment.version
        try:
            with reading(self.engine) as conn:
                installed = pull_version(conn, self.root, name, version)
        except UserError as err:
            self.refused[name] = assignment.id
            keeps = running_version(self.root, name)
            log.error(
                "daemon.profile_pull_refused", profile=name, version=version,
                running_version=keeps, error=str(err),
                fix=f"the daemon keeps version {keeps} of profile '{name}' and fetches no "
                "more of this version until another one is assigned to the line",
            )  # fmt: skip
            return False
        self.refused.pop(name, None)
        self.settled[name] = assignment.id
        if installed is None:
            return False
        log.info("daemon.profile_pulled", profile=name, version=version, line=self.line,
                 assigned_by=assignment.assigned_by, action=assignment.action)  # fmt: skip
        self.on_pulled(name)
        return True


def assignments_url(config: DaemonConfig) -> URL:
    """The database this line's assignments are read from: ``published_profiles.database``
    when set, else the plant's (``plant_database``: where the workstation publishes, with
    the forwarder's connection options), else the daemon's own. ``watch``'s pull at start,
    the running daemon's poller and ``doctor`` all read the one this names."""
    from padformer_edge.daemon.forwarder import plant_url

    if config.published_profiles.database is not None:
        return resolve_url(config.published_profiles.database)
    if config.plant_database is not None:
        return plant_url(config.plant_database)
    return resolve_url(config.database)


@contextmanager
def assignments_database(config: DaemonConfig) -> Iterator[Engine | None]:
    """``assignments_url``'s database opened read-only for the ``with`` block; None when
    published profiles are off, or the database does not exist yet or is not at the
    newest schema (nothing can be assigned there yet). One that cannot be reached raises
    SQLAlchemyError at its first query."""
    from padformer_edge.store.migrations import current_revision, head_revision

    if not config.published_profiles.enabled:
        yield None
        return
    url = assignments_url(config)
    path = sqlite_path(url)
    if path is not None and not path.exists():
        yield None
        return
    engine = open_engine(url, read_only=True)
    try:
        yield engine if current_revision(engine) == head_revision() else None
    finally:
        engine.dispose()


def assigned_versions(config: DaemonConfig) -> dict[str, int]:
    """Profile -> the version assigned to this line (``doctor``'s question); empty when
    ``assignments_database`` has none to give."""
    with assignments_database(config) as engine:
        if engine is None:
            return {}
        with reading(engine) as conn:
            return {a.profile: a.version for a in assigned(conn, config.line_name)}


def pull_at_start(config: DaemonConfig, root: Path) -> list[str]:
    """Before ``watch`` opens its profiles: pull what this line is assigned, so a line PC
    with an empty profiles folder runs its versions. A database that does not exist yet,
    is not at the newest schema or cannot be reached leaves the folder as it is (the
    daemon's poller takes over once it runs); a refused version is logged, and the
    folder's own version, if any, runs."""
    from sqlalchemy.exc import SQLAlchemyError

    try:
        with assignments_database(config) as engine:
            if engine is None:
                return []
            return AssignmentPoller(engine, config.line_name, root, interval_s=0).poll()
    except (SQLAlchemyError, UserError) as err:  # unreachable: the line inspects regardless
        log.warning("daemon.assignments_unreadable", error=str(err),
                    fix="the daemon starts with the profile versions on disk")  # fmt: skip
        return []
