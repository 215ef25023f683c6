"""One daemon per line and per camera folder: claimed before anything starts, kept while
the daemon runs, let go when it stops.

``watch`` takes the claims (``store.claims``) before it imports the model stack, so a
second daemon on a held line or folder says who holds it within a second or two and
leaves nothing behind: no model loaded, no page served, no row requeued. A thread renews
the claims every third of ``claim_expiry_s``; it runs beside the daemon's own threads
rather than in the supervising loop's healthy-only beat, because a daemon still loading
its models, or briefly unhealthy, still owns its line. A daemon that finds its claims
gone (it was silent past the expiry, say the database was unreachable, and another
daemon took over) stops itself with SIGTERM: two daemons must not run one line.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from types import TracebackType

from sqlalchemy import Engine

from padformer_edge.daemon.layout import resolve_layout
from padformer_edge.daemon.settings import DaemonConfig
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.claims import Claimant, acquire, release, renew
from padformer_edge.store.engine import open_engine
from padformer_edge.store.lines import with_line
from padformer_edge.store.models import utc_now
from padformer_edge.store.schema import migrate_on_start

log = get_logger("daemon")


class ClaimKeeper:
    """``with ClaimKeeper(config):`` holds the config's line and camera folders."""

    def __init__(self, config: DaemonConfig) -> None:
        self.config = config
        self.folders = [str(camera.root) for camera in resolve_layout(config).cameras]
        self.claimant = Claimant(
            line=config.line_name, host=socket.gethostname(), pid=os.getpid(),
            started_at=utc_now(),
        )  # fmt: skip
        self.every_s = config.claim_expiry_s / 3
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.engine: Engine | None = None

    def __enter__(self) -> ClaimKeeper:
        # The claims table is a schema revision: the database is brought to head first,
        # under the store's migrate lock (the daemon's own migrate is then a no-op).
        self.engine = with_line(open_engine(self.config.database), self.claimant.line)
        migrate_on_start(self.engine)
        acquire(self.engine, self.claimant, self.folders, self.config.claim_expiry_s)
        log.info("daemon.claimed", line=self.claimant.line, folders=self.folders)
        self._thread = threading.Thread(target=self._keep, name="claims", daemon=True)
        self._thread.start()
        return self

    def _keep(self) -> None:
        expected = len(self.claimant.resources(self.folders))
        while not self._stop.wait(self.every_s):
            assert self.engine is not None
            try:
                held = renew(self.engine, self.claimant, self.folders)
            except Exception as err:  # the database away for a moment: try again next time
                log.warning("daemon.claim_renew_failed", error=f"{type(err).__name__}: {err}")
                continue
            if held < expected:
                log.error(
                    "daemon.claim_lost", line=self.claimant.line, held=held, expected=expected
                )
                os.kill(os.getpid(), signal.SIGTERM)  # the daemon's own clean stop
                return

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self.engine is None:
            return
        try:
            release(self.engine, self.claimant)
        except Exception as err:  # unreachable database: the claims expire by themselves
            log.warning("daemon.claim_release_failed", error=f"{type(err).__name__}: {err}")
        self.engine.dispose()
