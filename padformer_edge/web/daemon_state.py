"""What every page says about the daemon: alive, or red with the reason and the limit.

The heartbeat comes from the database this page reads (``store.heartbeat``), so it is
this database's daemon. It is stale when older than ``stale_after_beats`` times the
interval the daemon stored with it; a database no daemon has beaten into, or one that
cannot be read, is shown red too, since in neither case is anything being inspected
that this page can vouch for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from padformer_edge.errors import UserError
from padformer_edge.log import get_logger
from padformer_edge.store.heartbeat import Heartbeat, read_heartbeat

if TYPE_CHECKING:
    from padformer_edge.web.webapp import WebApp

log = get_logger("web")
State = Literal["alive", "stale", "never", "unreadable"]


def seconds(value: float) -> str:
    """``4 s``, ``124 s``, ``2 h 05 min``: whole units an operator reads at a glance."""
    if value < 600:
        return f"{value:.0f} s"
    minutes = int(value // 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


@dataclass(frozen=True)
class DaemonState:
    state: State
    sentence: str
    beat: Heartbeat | None = None
    limit_s: float | None = None

    @property
    def red(self) -> bool:
        return self.state != "alive"

    def as_json(self) -> dict[str, Any]:
        beat = self.beat
        return {
            "state": self.state,
            "red": self.red,
            "sentence": self.sentence,
            "age_s": None if beat is None else round(beat.age_s, 3),
            "interval_s": None if beat is None else beat.interval_s,
            "limit_s": self.limit_s,
            "beat_at": None if beat is None else beat.beat_at.isoformat(),
        }


def daemon_state(app: WebApp) -> DaemonState:
    """Read this database's heartbeat and judge it against the configured multiple."""
    try:
        beat = read_heartbeat(app.reader())
    except UserError as err:
        return DaemonState("unreadable", f"The database cannot be read: {err}")
    except Exception as err:  # a banner must never take the page down with it
        log.error("web.heartbeat_read_failed", error=f"{type(err).__name__}: {err}")
        return DaemonState("unreadable", "The daemon's heartbeat cannot be read; see the log.")
    if beat is None:
        return DaemonState(
            "never",
            "No daemon has written a heartbeat to this database: nothing is being inspected.",
        )
    limit = app.stale_after_beats * beat.interval_s
    if beat.stale(app.stale_after_beats):
        sentence = (
            f"Daemon silent: last heartbeat {seconds(beat.age_s)} ago, more than "
            f"{seconds(limit)} ({app.stale_after_beats:g} x its {seconds(beat.interval_s)} "
            "interval). It may be stopped or stuck; new images are not being inspected."
        )
        return DaemonState("stale", sentence, beat, limit)
    return DaemonState("alive", f"Daemon alive: heartbeat {seconds(beat.age_s)} ago.", beat, limit)
