"""The thread that forwards a line's outbox to the plant database.

The line never waits for the plant: the worker commits results to the local SQLite file,
the triggers of ``store.outbox`` note each change there in the same transaction, the
dispatcher sends alerts from the same file, and this thread alone talks to PostgreSQL.
When the plant database is away it logs that once, keeps the backlog in the outbox and
tries again (sooner after a short outage, at most every ``MAX_RETRY_S``); when it
returns, the backlog goes in order, oldest first.

Each pass takes a batch, writes it to the plant in one transaction (``store.plant``,
idempotent by natural keys) and only then deletes the batch's outbox rows. A SIGKILL
between the two repeats the batch at the next start, which writes the same rows again
and adds none: exactly once.

With ``plant_database`` the line is claimed in the plant too (``daemon.claim_keeper``), and
nothing is written there unless that claim is current: two PCs configured with one line
name never both forward into it.

The plant database gets its schema from the same migrations as every database, run here
(under the advisory lock every daemon of the plant takes) when the thread first reaches
it, so a line whose plant is down at start still starts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import InterfaceError, OperationalError

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import describe, open_engine, resolve_url
from padformer_edge.store.heartbeat import read_heartbeat, record_heartbeat
from padformer_edge.store.lines import line_of, with_line
from padformer_edge.store.migrations import migrate_on_start
from padformer_edge.store.outbox import acknowledge, line_backlog, take
from padformer_edge.store.plant import write_batch

log = get_logger("plant")

BATCH = 200
"""Outbox rows per plant transaction: a backlog of hours drains in a few hundred."""
POLL_S = 0.5
"""How often an idle forwarder looks for new outbox rows (a local read, no lock)."""
FIRST_RETRY_S = 0.5
MAX_RETRY_S = 10.0
"""Retries after a failure start at ``FIRST_RETRY_S`` and double up to this."""
CONNECT_OPTIONS = {
    # Fail a connection attempt to a plant that is down in seconds, and notice a
    # connection whose peer vanished (a cut network) within about ten.
    "connect_timeout": "5",
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "3",
}


def plant_url(raw: str) -> URL:
    """The plant database's URL with the connection options above, unless it sets them."""
    url = resolve_url(raw)
    missing = {k: v for k, v in CONNECT_OPTIONS.items() if k not in url.query}
    return url.update_query_dict(missing)


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


class Forwarder:
    """Forwards ``local``'s line's outbox to the plant database at ``plant`` until ``stop()``."""

    def __init__(
        self, local: Engine, plant: str, claimed: Callable[[], bool] | None = None
    ) -> None:
        self.local = local
        self.claimed = claimed
        """Whether this daemon's claim on its line in the plant is current
        (``daemon.claim_keeper``); nothing is written to the plant while it is not."""
        self.url = plant_url(plant)
        self.where = describe(resolve_url(plant))  # for people: no password, no options
        self.line = line_of(local)
        self.forwarded = 0
        self.unreachable_since: datetime | None = None
        self.last_error: str | None = None
        self.refused = False
        """The last failure was not a connection failing (the plant refused a write)."""
        self._plant: Engine | None = None
        self._beat_sent: datetime | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("the plant forwarder was already started")
        self._thread = threading.Thread(target=self._run, name="plant-forwarder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float | None = None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._plant is not None:
            self._plant.dispose()

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and not self._stop.is_set()

    def status(self) -> str:
        """One phrase for the daemon's status line (STATUS=, the heartbeat, the page)."""
        backlog = line_backlog(self.local)
        if self.unreachable_since is not None:
            what = "failing writes" if self.refused else "unreachable"
            return (
                f"plant database {what} since {self.unreachable_since:%H:%M:%S} UTC, "
                f"{backlog} change(s) waiting"
            )
        if not self._may_write():
            return (
                f"waiting for line {self.line}'s claim in the plant database, "
                f"{backlog} change(s) waiting"
            )
        if self._plant is None:
            return f"plant database not reached yet, {backlog} change(s) waiting"
        return f"plant backlog {backlog}"

    def _may_write(self) -> bool:
        return self.claimed is None or self.claimed()

    # -- the thread ----------------------------------------------------------------------
    def _connect(self) -> Engine:
        if self._plant is None:
            engine = with_line(open_engine(self.url), self.line)
            try:
                migrate_on_start(engine)
            except BaseException:
                engine.dispose()
                raise
            self._plant = engine
        return self._plant

    def forward_once(self) -> int:
        """Forward one batch; the number of outbox rows it settled (0: nothing owed)."""
        plant = self._connect()
        batch = take(self.local, BATCH)
        if len(batch):
            write_batch(plant, batch)
            acknowledge(self.local, batch.outbox_ids)
            self.forwarded += len(batch)
        self._forward_heartbeat(plant)
        return len(batch)

    def _forward_heartbeat(self, plant: Engine) -> None:
        """The line's last beat, copied to the plant when it changed: a plant page sees
        each line's daemon as the line's own page does."""
        beat = read_heartbeat(self.local, line=self.line)
        if beat is None or beat.beat_at == self._beat_sent:
            return
        record_heartbeat(
            plant,
            interval_s=beat.interval_s,
            started_at=beat.started_at,
            pid=beat.pid,
            host=beat.host,
            status=beat.status,
            now=beat.beat_at,
        )
        self._beat_sent = beat.beat_at

    def _run(self) -> None:
        retry_s = FIRST_RETRY_S
        while not self._stop.is_set():
            if not self._may_write():  # another PC may hold the line: send it nothing
                self._stop.wait(POLL_S)
                continue
            try:
                settled = self.forward_once()
            except Exception as err:  # the plant is away (or refused): keep the backlog
                self._failed(err)
                self._stop.wait(retry_s)
                retry_s = min(retry_s * 2, MAX_RETRY_S)
                continue
            retry_s = FIRST_RETRY_S
            if self.unreachable_since is not None:
                log.info(
                    "plant.reachable",
                    plant=self.where,
                    down_s=round(time.time() - self.unreachable_since.timestamp(), 1),
                    backlog=line_backlog(self.local),
                )
                self.refused, self.unreachable_since, self.last_error = False, None, None
            if settled < BATCH:  # caught up: look again in a moment
                self._stop.wait(POLL_S)

    def _failed(self, err: Exception) -> None:
        if self._plant is not None:
            self._plant.dispose()  # fresh connections next time, not the broken ones
        message = f"{type(err).__name__}: {_first_line(err)}"
        # A lost connection (or a schema check that could not connect) is the plant being
        # away, which heals by itself; anything else (a write the plant refuses, a schema
        # a newer version wrote) needs a person, so it is an error, logged again whenever
        # the reason changes.
        refused = not isinstance(err, (OperationalError, InterfaceError, UserError))
        if refused and message != self.last_error:
            log.error("plant.write_failed", plant=self.where, error=message,
                      backlog=_safe_backlog(self.local))  # fmt: skip
        if self.unreachable_since is None:
            self.unreachable_since = datetime.now(UTC)
            if not refused:
                log.warning("plant.unreachable", plant=self.where, error=message,
                            backlog=_safe_backlog(self.local))  # fmt: skip
        # the reason before the flag: a reader (status(), the page) that sees the plant
        # refusing also sees why, never the flag with no reason or an older one
        self.last_error = message
        self.refused = refused


def _safe_backlog(engine: Engine) -> int | None:
    try:
        return line_backlog(engine)
    except Exception:  # the local file is busy: the warning goes out without the count
        return None
