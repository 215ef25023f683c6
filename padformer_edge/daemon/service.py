"""The daemon process: start-up order, the supervising loop, and a clean stop.

Start-up does everything that can fail before it claims to be ready: the profiles are
opened first (a wrong name must not leave a new database behind), then migrations
(under the store's file lock, after a backup), requeueing what a crash left
``processing``, removing heatmap temp files a crash left half-written, and building and
warming every detector. Only then READY=1. The main thread supervises: it
restarts a dead observer, pings the systemd watchdog only while the observer, the
worker and the database are all healthy (so systemd restarts a daemon that is wedged
rather than one that is merely busy), and reports the backlog in STATUS=. A fourth
thread takes up new profile versions without a restart (``reload.py``), a fifth pulls
the versions published and assigned to this line (``assignments.py``), and with
``plant_database`` set another forwards the line's outbox to the plant (``forwarder.py``).

SIGTERM or SIGINT stop intake first, let the worker finish the batch in hand, return
anything still ``processing`` to ``pending`` and exit 0.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext

from sqlalchemy import Engine, text

from padformer_edge.daemon.alerts.dispatcher import AlertDispatcher
from padformer_edge.daemon.assignments import AssignmentPoller, assignments_url
from padformer_edge.daemon.forwarder import Forwarder
from padformer_edge.daemon.inspectors import Inspector, build_inspector, open_profile
from padformer_edge.daemon.intake import Intake
from padformer_edge.daemon.layout import resolve_layout
from padformer_edge.daemon.notify import Notifier, watchdog_interval_s
from padformer_edge.daemon.opened import OpenedLine, open_line
from padformer_edge.daemon.reload import ProfileReloader
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.daemon.stopping import stop_on_signals
from padformer_edge.daemon.worker import Worker, remove_stale_temporaries
from padformer_edge.detect.tf32 import allow_tf32
from padformer_edge.devices.gpu_gauges import follow_devices
from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.engine import open_engine, reading
from padformer_edge.store.heartbeat import record_heartbeat
from padformer_edge.store.lines import with_line
from padformer_edge.store.migrations import migrate_on_start
from padformer_edge.store.models import utc_now
from padformer_edge.store.outbox import disable_forwarding, enable_forwarding
from padformer_edge.store.queue import requeue_interrupted

log = get_logger("daemon")

STATUS_EVERY_S = 5.0
"""How often a healthy daemon reports STATUS= and beats; the beat stores this interval."""
INTAKE_TICK_S = 0.1


class Daemon:
    """Owns the threads; ``run`` blocks until a stop signal and returns the exit code."""

    def __init__(
        self,
        config: DaemonConfig,
        notifier: Notifier | None = None,
        plant_claimed: Callable[[], bool] | None = None,
        stop: threading.Event | None = None,
        opened: OpenedLine | None = None,
    ) -> None:
        self.config = config
        self.plant_claimed = plant_claimed
        self.notifier = notifier or Notifier()
        self.own_signals = stop is None
        """Whoever hands in ``stop`` has its signal handlers set already (``watch``)."""
        self.stop = stop if stop is not None else threading.Event()
        """Set by SIGTERM or SIGINT, and by whoever handed it in (``watch``'s claim keeper)."""
        self.opened = opened
        """What the caller opened and checked already (``watch``): not opened again."""
        self.layout = opened.layout if opened is not None else resolve_layout(config)
        self.started_at = utc_now()

    def start(self) -> None:
        # Profiles first: a config naming a profile that does not exist (or has no
        # threshold) must fail before the database is created or migrated. Each file's
        # digest is taken before it is read: a change made meanwhile is then seen by the
        # reloader's first check rather than missed.
        opened = self.opened if self.opened is not None else open_line(self.config, self.layout)
        self.opened = None  # the reloader owns the profiles from here on
        digests, profiles = opened.digests, opened.profiles
        # Every row this daemon writes carries its line; it works on its line's rows only.
        self.engine: Engine = with_line(open_engine(self.config.database), self.config.line_name)
        revision = migrate_on_start(self.engine)
        requeued, failed = requeue_interrupted(
            self.engine, max_attempts=self.config.worker.max_attempts
        )
        self.forwarder = self._plant_forwarder()
        stale = remove_stale_temporaries(self.layout.heatmaps)
        log.info(
            "daemon.recovered",
            revision=revision,
            requeued=requeued,
            failed=failed,
            stale_temporaries=stale,
        )
        allow_tf32(self.config.worker.allow_tf32)  # before any detector resolves its device
        shared: dict[str, Inspector] = {
            name: build_inspector(
                profile,
                threshold,
                self.config.worker.device,
                self.config.worker.runtime,
                self.config.worker.max_batch,
            )
            for name, (profile, threshold) in profiles.items()
        }
        cameras = {c.name: c for c in self.layout.cameras}
        inspectors = {cam.name: shared[cam.profile] for cam in self.config.cameras}
        self.dispatcher = AlertDispatcher(self.engine, self.config.alerts)
        self.intake = Intake(
            self.engine,
            self.layout.cameras,
            self.config.intake,
            on_queued=lambda: self.worker.wake(),
        )
        self.worker = Worker(
            self.engine,
            cameras,
            inspectors,
            self.config.worker,
            self.layout.heatmaps,
            self.intake.max_bytes,
            self.config.alerts,
            on_alert=self.dispatcher.wake,
            max_pixels=int(self.config.intake.max_megapixels * 1e6),
            drift=self.config.drift,
            on_cpu=self.inspector_on_cpu,
        )
        self.reloader = ProfileReloader(
            self.layout.profiles, self.config.worker, self.config.profile_check_interval_s
        )
        for name, inspector in shared.items():
            self.reloader.serve(name, digests[name], inspector)
        self.reloader.swap = self.worker.use_inspector
        self.assignments = self._assignment_poller()
        # /metrics in this process shows the GPU the worker's detectors are on, if any
        follow_devices(lambda: [i.detector.device for i in self.worker.inspectors.values()])
        self.dispatcher.start()
        if self.forwarder is not None:
            self.forwarder.start()
        self.intake.start_observer()
        self.intake_thread = self._spawn("intake", self._intake_loop)
        self.worker_thread = self._spawn("worker", lambda: self.worker.run(self.stop))
        self.reload_thread = self._spawn("profiles", lambda: self.reloader.run(self.stop))
        if self.assignments is not None:
            poller = self.assignments
            self._spawn("assignments", lambda: poller.run(self.stop))

    def _assignment_poller(self) -> AssignmentPoller | None:
        """The poller of this line's published profile versions, on the database
        ``assignments_url`` names: the daemon's own engine (only read) when that is it."""
        published = self.config.published_profiles
        if not published.enabled:
            return None
        engine = self.engine
        if published.database is not None or self.config.plant_database is not None:
            engine = open_engine(assignments_url(self.config), read_only=True)
        return AssignmentPoller(
            engine, self.config.line_name, self.layout.profiles, published.poll_interval_s,
            on_pulled=lambda _name: self.reloader.wake(),
        )  # fmt: skip

    def _plant_forwarder(self) -> Forwarder | None:
        """With ``plant_database`` set, capture this line's changes into the outbox from
        now on (after migrating: a migration may have rebuilt the tables the capture
        triggers sit on) and the forwarder that sends them; without it, no capture."""
        if self.config.plant_database is None:
            disable_forwarding(self.engine)
            return None
        if self.engine.dialect.name != "sqlite":
            raise UserError(
                f"plant_database forwards from the line's own SQLite database, but this "
                f"daemon's database is {self.engine.dialect.name} (set by database or "
                "$PADFORMER_EDGE_DB); use a SQLite file there or remove plant_database."
            )
        forwarder = Forwarder(self.engine, self.config.plant_database, self.plant_claimed)
        enable_forwarding(self.engine, forwarder.where)
        log.info("plant.forwarding", plant=forwarder.where, line=forwarder.line)
        return forwarder

    def inspector_on_cpu(self, name: str) -> Inspector:
        """Profile ``name`` rebuilt on the CPU (the worker's way out of a failed GPU)."""
        profile, threshold = open_profile(self.layout.profiles, name)
        worker = self.config.worker
        return build_inspector(profile, threshold, "cpu", worker.runtime, worker.max_batch)

    def _spawn(self, name: str, target) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        return thread

    def _intake_loop(self) -> None:
        while not self.stop.is_set():
            try:
                self.intake.step()
            except Exception as err:  # one bad step (a database hiccup) must not end intake
                log.error("intake.step_failed", error=f"{type(err).__name__}: {err}")
            self.intake.wait_for_offer(INTAKE_TICK_S)  # a renamed-in file: step at once

    # -- supervision -------------------------------------------------------------------
    def healthy(self) -> bool:
        """Observer, intake, worker, alert (and plant forwarder) threads alive, the worker
        not stuck, the line's database reachable (the plant's may be away: that is
        the forwarder's to wait out, not a reason to restart the line)."""
        busy = self.worker.busy_since
        stalled = max(time.monotonic() - self.worker.beat, 0.0) > self.config.watchdog_stall_s
        stuck = busy is not None and time.monotonic() - busy > self.config.watchdog_stall_s
        if not (self.intake.observer_alive() and self.intake_thread.is_alive()):
            return False
        if not self.worker_thread.is_alive() or (stalled and busy is None) or stuck:
            return False
        if not self.dispatcher.alive:
            return False
        if self.forwarder is not None and not self.forwarder.alive:
            return False  # its loop survives the plant's failures; dead means a bug
        try:
            with reading(self.engine) as conn:
                conn.execute(text("SELECT 1"))
        except Exception:
            return False
        return True

    def status_line(self) -> str:
        line = (
            f"backlog {self.worker.backlog()}, inspected {self.worker.processed}, "
            f"last {self.worker.last_result}"
        )
        return f"{line}, {self.forwarder.status()}" if self.forwarder is not None else line

    def supervise(self) -> int:
        """Until a stop signal (0), or until a thread that cannot be restarted died (1):
        exiting then lets ``Restart=on-failure`` start a fresh process."""
        tick = min(watchdog_interval_s() or 1.0, 1.0)
        next_status = 0.0
        while not self.stop.wait(tick):
            if not (self.worker_thread.is_alive() and self.intake_thread.is_alive()):
                log.error(
                    "daemon.thread_died",
                    worker=self.worker_thread.is_alive(),
                    intake=self.intake_thread.is_alive(),
                )
                return 1
            self.intake.ensure_observer()
            healthy = self.healthy()
            if healthy:
                self.notifier.watchdog()
            else:
                log.error(
                    "daemon.unhealthy",
                    observer=self.intake.observer_alive(),
                    worker=self.worker_thread.is_alive(),
                    dispatcher=self.dispatcher.alive,
                )
            if time.monotonic() >= next_status:
                next_status = time.monotonic() + STATUS_EVERY_S
                try:
                    self.notifier.status(self.status_line())
                    if healthy:
                        self.beat()
                except Exception as err:
                    log.error("daemon.status_failed", error=str(err))
        return 0

    def beat(self) -> None:
        """Store the heartbeat in this daemon's own database, where the page reads it.

        Called from the supervising thread and only while ``healthy()``: a beat means the
        observer, worker, dispatcher and database all answered. It is one short write
        through the daemon's engine, like intake's and the worker's.
        """
        try:
            record_heartbeat(
                self.engine,
                interval_s=STATUS_EVERY_S,
                started_at=self.started_at,
                pid=os.getpid(),
                host=socket.gethostname(),
                status=self.status_line(),
            )
        except Exception as err:  # a locked or full disk costs the page its beat, no more
            log.warning("daemon.heartbeat_failed", error=f"{type(err).__name__}: {err}")

    def shutdown(self) -> None:
        self.notifier.stopping()
        log.info("daemon.stopping")
        self.stop.set()
        self.worker.wake()  # out of its idle wait at once
        self.intake.wake()
        self.intake.stop_observer()
        self.intake_thread.join()
        self.worker_thread.join()  # finishes the batch in hand
        follow_devices(None)
        # The reloader is not joined: a version being built now is of no use any more,
        # and waiting for its model to load would only delay the stop.
        self.dispatcher.stop()  # after the worker: its last alerts are in the outbox
        if self.forwarder is not None:
            self.forwarder.stop()  # what it has not sent waits in the outbox for next time
        requeued, _ = requeue_interrupted(self.engine, max_attempts=1 << 30)
        log.info("daemon.stopped", requeued=requeued, inspected=self.worker.processed)

    def run(self) -> int:
        with stop_on_signals(self.stop) if self.own_signals else nullcontext(self.stop):
            if self.stop.is_set():  # asked to stop while watch was still getting ready
                log.info("daemon.stopped_before_start")
                return 0
            self.start()
            if self.stop.is_set():
                self.shutdown()
                return 0
            self.notifier.ready(self.status_line())
            self.beat()
            log.info(
                "daemon.ready",
                cameras=[c.name for c in self.layout.cameras],
                heatmaps=str(self.layout.heatmaps),
            )
            code = self.supervise()
            self.shutdown()
        return code


def run_daemon(
    config: DaemonConfig,
    plant_claimed: Callable[[], bool] | None = None,
    stop: threading.Event | None = None,
    opened: OpenedLine | None = None,
) -> int:
    """Run until SIGTERM/SIGINT or ``stop`` is set; the exit code for the CLI.
    ``plant_claimed`` says when the line's claim in the plant database is current
    (``ClaimKeeper``): only then does the forwarder write there. A caller that hands in
    ``stop`` has set the signal handlers that set it (``watch``), and ``opened`` is what
    it opened already (``daemon.opened.open_line``)."""
    return Daemon(config, plant_claimed=plant_claimed, stop=stop, opened=opened).run()
