"""One daemon per line and per camera folder: claimed before anything starts, kept while
the daemon runs, let go when it stops.

``watch`` takes the claims (``store.claims``) before it imports the model stack, so a
second daemon on a held line or folder says who holds it within a second or two and
leaves nothing behind: no model loaded, no page served, no row requeued. A thread renews
the claims every third of ``claim_expiry_s``; it runs beside the daemon's own threads
rather than in the supervising loop's healthy-only beat, because a daemon still loading
its models, or briefly unhealthy, still owns its line. A daemon that finds its claims
gone (it was silent past the expiry, say the database was unreachable, and another
daemon took over) stops itself: two daemons must not run one line. It sets ``stop``, the
daemon's stop request, which SIGTERM sets too (``daemon.stopping``); the daemon takes it
up in whatever phase of its start it comes, so a refusal is always the CLI's sentence
and exit 2.

With ``plant_database`` set the line's own SQLite file only sees the daemons of its own
state folder, so the line and its folders are claimed in the plant database too
(``PlantClaim``): that is where two line PCs configured with one line name meet. The
plant is asked first, so a refused daemon on a new PC does not even create its SQLite
file. A plant that does not answer at start does not stop the line: the daemon starts
on its local claim and takes the plant claim when the plant answers; until then, and
whenever the plant claim is not known to be current, the forwarder sends nothing, so a
line that turns out to be held by another PC has forwarded nothing into it. Its results
stay in its SQLite file and outbox, nothing lost; it stops with the refusal sentence.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from collections.abc import Sequence
from types import TracebackType

from sqlalchemy import Engine

from padformer_edge.daemon.forwarder import plant_url
from padformer_edge.daemon.layout import resolve_layout
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.claims import (
    Claimant,
    ClaimRefused,
    acquire,
    line_resource,
    list_claims,
    release,
    renew,
)
from padformer_edge.store.engine import describe, open_engine, resolve_url
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import migrate_on_start
from padformer_edge.store.models import utc_now

log = get_logger("daemon")

CURRENT_FRACTION = 2 / 3
"""The plant claim counts as current (the forwarder may write) for this fraction of
``claim_expiry_s`` after it was last taken or renewed: renewals come every third, and
the last third is the margin for a slow write and for two PCs' clocks disagreeing
about when a claim expired."""
PLANT_RETRY_S = 2.0
"""How often a daemon asks the plant again while it does not answer (at start, or
during an outage): its results wait in the outbox until its claim there is current."""


def _error(err: BaseException) -> str:
    return f"{type(err).__name__}: {(str(err).strip().splitlines() or [''])[0]}"


class PlantClaim:
    """The line's and its folders' claims in the plant database, taken when it answers.

    ``take`` and ``keep`` are called from one thread (the keeper's); ``current`` from the
    forwarder's, which reads one float.
    """

    def __init__(
        self, url: str, claimant: Claimant, folders: Sequence[str], expiry_s: float
    ) -> None:
        self.url = plant_url(url)  # fails in seconds when the plant does not answer
        self.where = describe(resolve_url(url))
        self.claimant, self.folders, self.expiry_s = claimant, folders, expiry_s
        self.held = False
        self._confirmed: float | None = None  # time.monotonic() of the last take/renewal
        self._engine: Engine | None = None
        self._warned: str | None = None  # the failure last logged, until one succeeds

    def current(self) -> bool:
        """Whether this daemon holds the line in the plant now, as far as it can know."""
        confirmed = self._confirmed
        return confirmed is not None and (
            time.monotonic() - confirmed < self.expiry_s * CURRENT_FRACTION
        )

    def _connect(self) -> Engine:
        if self._engine is None:
            engine = with_line(open_engine(self.url), self.claimant.line)
            try:
                migrate_on_start(engine)  # the claims table is part of the schema
            except BaseException:
                engine.dispose()
                raise
            self._engine = engine
        return self._engine

    @property
    def answering(self) -> bool:
        """Whether the last take or renewal reached the plant."""
        return self._warned is None

    def _warn(self, event: str, err: Exception) -> None:
        """Log a failure once per reason, not at every retry of a long outage."""
        message = _error(err)
        if message != self._warned:
            log.warning(event, plant=self.where, error=message)
            self._warned = message

    def _away(self) -> None:
        if self._engine is not None:
            self._engine.dispose()  # fresh connections next time, not broken ones
            self._engine = None

    def take(self) -> bool:
        """Claim the line in the plant: True when taken, False when the plant does not
        answer (or cannot be used yet); ``ClaimRefused`` when a live daemon holds it."""
        asked = time.monotonic()
        try:
            acquire(self._connect(), self.claimant, self.folders, self.expiry_s)
        except ClaimRefused:
            raise
        except Exception as err:  # away, or a schema this role cannot upgrade: try later
            self._away()
            self._warn("daemon.plant_claim_waiting", err)
            return False
        self.held, self._confirmed, self._warned = True, asked, None
        log.info("daemon.plant_claimed", plant=self.where, line=self.claimant.line)
        return True

    def keep(self) -> str | None:
        """One beat: take the claim if not held yet, else renew it. ``None`` while all is
        well (or the plant is away); the sentence to stop with when another daemon holds
        the line, or took it while this one could not renew."""
        if not self.held:
            try:
                self.take()
            except ClaimRefused as refused:
                return str(refused)
            return None
        asked = time.monotonic()
        try:
            held = renew(self._connect(), self.claimant, self.folders)
        except Exception as err:  # the plant away for a moment: the forwarder waits too
            self._away()
            self._warn("daemon.plant_claim_renew_failed", err)
            return None
        if held == len(self.claimant.resources(self.folders)):
            self._confirmed, self._warned = asked, None
            return None
        self._confirmed = None
        return self._lost_sentence()

    def _lost_sentence(self) -> str:
        """Who holds the line now, if anyone can be named."""
        now, line = utc_now(), line_resource(self.claimant.line)
        try:
            assert self._engine is not None
            for claim in list_claims(self._engine):
                if claim.resource == line and claim.live(now, self.claimant.host):
                    return claim.refusal()
        except Exception as err:  # the sentence below says enough
            log.warning("daemon.plant_claim_lookup_failed", error=_error(err))
        return (
            f"this daemon's claim on line '{self.claimant.line}' in the plant database "
            f"{self.where} was taken while it could not renew it; start it again once the "
            "line is free."
        )

    def release(self) -> None:
        if self._engine is None:
            return
        try:
            if self.held:
                release(self._engine, self.claimant)
        except Exception as err:  # the plant away: the claim expires by itself
            log.warning("daemon.plant_claim_release_failed", error=_error(err))
        self._engine.dispose()
        self._engine = None


class ClaimKeeper:
    """``with ClaimKeeper(config):`` holds the config's line and camera folders (in the
    plant database too, with ``plant_database``). ``refusal`` is the sentence the daemon
    stopped for when the plant showed another live holder after start."""

    def __init__(self, config: DaemonConfig) -> None:
        self.config = config
        self.folders = [str(camera.root) for camera in resolve_layout(config).cameras]
        self.claimant = Claimant(
            line=config.line_name, host=socket.gethostname(), pid=os.getpid(),
            started_at=utc_now(),
        )  # fmt: skip
        self.every_s = config.claim_expiry_s / 3
        self.plant: PlantClaim | None = None
        if config.plant_database is not None:
            self.plant = PlantClaim(
                config.plant_database, self.claimant, self.folders, config.claim_expiry_s
            )
        self.refusal: str | None = None
        self.stop = threading.Event()
        """Set when this daemon must stop (its claims are another's); the daemon's own
        stop request, which SIGTERM and SIGINT set too (``watch``)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.engine: Engine | None = None

    def plant_current(self) -> bool:
        """Whether the forwarder may write to the plant (always, without a plant)."""
        return self.plant is None or self.plant.current()

    def __enter__(self) -> ClaimKeeper:
        # The plant first: a line held by another PC is refused before this PC's SQLite
        # file is created. A plant that does not answer is waited for by the thread.
        try:
            if self.plant is not None:
                self.plant.take()
            # The claims table is a schema revision: the database is brought to head
            # first, under the store's migrate lock (the daemon's own migrate is then a
            # no-op).
            self.engine = with_line(open_engine(self.config.database), self.claimant.line)
            migrate_on_start(self.engine)
            acquire(self.engine, self.claimant, self.folders, self.config.claim_expiry_s)
        except BaseException:
            if self.plant is not None:
                self.plant.release()
            if self.engine is not None:
                self.engine.dispose()
            raise
        log.info("daemon.claimed", line=self.claimant.line, folders=self.folders)
        self._thread = threading.Thread(target=self._keep, name="claims", daemon=True)
        self._thread.start()
        return self

    def _keep(self) -> None:
        """Renew the local claims every ``every_s``; beat the plant claim as often, or
        every ``PLANT_RETRY_S`` while it is still to be taken or the plant does not
        answer (the forwarder waits for the claim: a backlog drains soon after an outage)."""
        now = time.monotonic()
        next_local = now + self.every_s
        # Without a plant there is no plant beat to wait for: a finite deadline that is
        # never moved on would pass and turn the wait below into a spin holding the GIL.
        next_plant = math.inf if self.plant is None else now + self.every_s
        if self.plant is not None and not self.plant.held:
            next_plant = now + min(self.every_s, PLANT_RETRY_S)
        while not self._stop.wait(max(0.0, min(next_local, next_plant) - time.monotonic())):
            now = time.monotonic()
            if now >= next_local:
                next_local = now + self.every_s
                if not self._renew_local():
                    return
            if self.plant is not None and now >= next_plant:
                sentence = self.plant.keep()
                if sentence is not None:
                    self.refusal = sentence
                    log.error("daemon.plant_claim_refused", line=self.claimant.line,
                              error=sentence)  # fmt: skip
                    self.stop.set()  # the line is another's
                    return
                settled = self.plant.held and self.plant.answering
                wait_s = self.every_s if settled else min(self.every_s, PLANT_RETRY_S)
                next_plant = time.monotonic() + wait_s

    def _renew_local(self) -> bool:
        """Renew the claims in the line's own database; False (after asking the daemon to
        stop) when another daemon took them over."""
        assert self.engine is not None
        expected = len(self.claimant.resources(self.folders))
        try:
            held = renew(self.engine, self.claimant, self.folders)
        except Exception as err:  # the database away for a moment: try again next time
            log.warning("daemon.claim_renew_failed", error=_error(err))
            return True
        if held < expected:
            log.error("daemon.claim_lost", line=self.claimant.line, held=held, expected=expected)
            self.stop.set()  # the daemon's own clean stop
            return False
        return True

    def raise_refusal(self) -> None:
        """After the daemon stopped: the refusal as the CLI's one sentence (exit 2)."""
        if self.refusal is not None:
            raise UserError(self.refusal)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.plant is not None:
            self.plant.release()
        if self.engine is None:
            return
        try:
            release(self.engine, self.claimant)
        except Exception as err:  # unreachable database: the claims expire by themselves
            log.warning("daemon.claim_release_failed", error=_error(err))
        self.engine.dispose()
