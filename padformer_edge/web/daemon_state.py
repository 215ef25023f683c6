"""What every page says about the daemon: alive, or red with the reason and the limit.

The heartbeats come from the database this page reads (``store.heartbeat``), one per
line, so they are this database's daemons. A page the page cache keeps (``recent``) may
show them as read at most a page-cache second before, for every such page together
(``WebApp.heartbeats``, each age measured at the page's own moment); the banner's poll and
the pages not kept read them anew. A beat is stale when older than
``stale_after_beats`` times the interval the daemon stored with it; a database no
daemon has beaten into, or one that cannot be read, is shown red too, since in neither
case is anything being inspected that this page can vouch for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from padformer_edge.errors import UserError
from padformer_edge.reporting.log import get_logger
from padformer_edge.store.heartbeat import Heartbeat

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


def judge(beat: Heartbeat, stale_after_beats: float, named: bool) -> DaemonState:
    """One line's beat against the configured multiple; ``named`` says which line (when
    the database has several)."""
    who = f"Line {beat.line}'s daemon" if named else "Daemon"
    limit = stale_after_beats * beat.interval_s
    if beat.stale(stale_after_beats):
        sentence = (
            f"{who} silent: last heartbeat {seconds(beat.age_s)} ago, more than "
            f"{seconds(limit)} ({stale_after_beats:g} x its {seconds(beat.interval_s)} "
            "interval). It may be stopped or stuck; new images are not being inspected."
        )
        return DaemonState("stale", sentence, beat, limit)
    return DaemonState("alive", f"{who} alive: heartbeat {seconds(beat.age_s)} ago.", beat, limit)


def plant_backlog_sentence(
    app: WebApp, lines: frozenset[str] | None = None, recent: bool = False
) -> str:
    """What the lines of this database (of ``lines`` when given) still owe the plant
    database (``store.outbox``), as a sentence; empty when nothing is owed or the
    database forwards nothing."""
    try:
        owed = {line: n for line, n in app.backlog(recent).items()
                if n and (lines is None or line in lines)}  # fmt: skip
    except Exception as err:  # the banner's own sentence already says what is wrong
        log.warning("web.plant_backlog_unread", error=f"{type(err).__name__}: {err}")
        return ""
    if not owed:
        return ""
    parts = ", ".join(f"{n} of line {line}" for line, n in sorted(owed.items()))
    return f" Changes waiting for the plant database: {parts}."


def daemon_state(
    app: WebApp, lines: frozenset[str] | None = None, recent: bool = False
) -> DaemonState:
    """Every line's heartbeat judged (``line_states``), and the backlog still owed to
    the plant database, if any, said after it; of ``lines`` only when given (a viewer
    limited to lines: ``scope``)."""
    state = line_states(app, lines, recent)
    if state.state == "unreadable":
        return state
    waiting = plant_backlog_sentence(app, lines, recent)
    return replace(state, sentence=state.sentence + waiting) if waiting else state


def line_states(
    app: WebApp, lines: frozenset[str] | None = None, recent: bool = False
) -> DaemonState:
    """Read every line's heartbeat in this database (of ``lines`` when given) and judge
    each against the configured multiple: red while any line's daemon is silent (the
    first such line's sentence, and how many others are), else alive."""
    try:
        beats = app.heartbeats(recent)
        if lines is not None:
            beats = [beat for beat in beats if beat.line in lines]
    except UserError as err:
        return DaemonState("unreadable", f"The database cannot be read: {err}")
    except Exception as err:  # a banner must never take the page down with it
        log.error("web.heartbeat_read_failed", error=f"{type(err).__name__}: {err}")
        return DaemonState("unreadable", "The daemon's heartbeat cannot be read; see the log.")
    if not beats:
        return DaemonState(
            "never",
            "No daemon has written a heartbeat to this database: nothing is being inspected.",
        )
    states = [judge(beat, app.stale_after_beats, len(beats) > 1) for beat in beats]
    silent = [state for state in states if state.red]
    if not silent:
        freshest = min(states, key=lambda state: state.beat.age_s if state.beat else 0.0)
        if len(states) == 1:
            return freshest
        return replace(
            freshest, sentence=f"All {len(states)} lines' daemons alive: " + ", ".join(
                f"{s.beat.line} {seconds(s.beat.age_s)} ago" for s in states if s.beat
            ) + "."
        )  # fmt: skip
    first = silent[0]
    if len(silent) > 1:
        others = len(silent) - 1
        first = replace(first, sentence=f"{first.sentence} {others} other line(s) silent too.")
    return first
