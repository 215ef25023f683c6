"""Which line a row belongs to: the name every daemon writes beside its rows.

A plant runs one daemon per line PC, and several may write one PostgreSQL database (or
two daemons on one PC one SQLite file). Each row a daemon writes carries its line, and
each row it works on (the pending queue, the outbox, its own heartbeat) is taken from
its own line only: a daemon that claimed another line's files would look for them on a
disk it does not have.

The line travels with the engine, as one of SQLAlchemy's execution options
(``with_line``), rather than as an argument of every store function: the daemon binds
its engine once at start and every write through it (intake's queue, the worker's
results, the dispatcher's outbox) is then stamped without each caller knowing lines
exist. An engine with no line bound, as the CLI opens, stands for this PC's default
line, the host name, which is also what a daemon with no ``line`` in its config uses.
"""

from __future__ import annotations

import re
import socket
from typing import TYPE_CHECKING

from padformer_edge.errors import UserError

if TYPE_CHECKING:  # the daemon's config imports the line's rules without SQLAlchemy
    from sqlalchemy import Engine

LINE_OPTION = "padformer_edge_line"
MAX_LINE_CHARS = 64
LINE_PATTERN = r"^[A-Za-z0-9_.-]+$"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def default_line() -> str:
    """This PC's host name as a line name: characters a line name may not hold become
    ``-``, cut to the column's width; ``line`` if nothing is left."""
    name = _UNSAFE.sub("-", socket.gethostname()).strip("-")[:MAX_LINE_CHARS]
    return name or "line"


def line_name(raw: str) -> str:
    """``raw`` as a line name, or one sentence saying what a line name may be."""
    name = raw.strip()
    if not re.match(LINE_PATTERN, name) or len(name) > MAX_LINE_CHARS:
        shown = raw if len(raw) <= 40 else raw[:40] + "..."
        raise UserError(
            f"'{shown}' is not a line name; use up to {MAX_LINE_CHARS} letters, digits, "
            "'.', '_' or '-', as the line's 'line:' in its daemon config."
        )
    return name


def with_line(engine: Engine, line: str) -> Engine:
    """``engine`` (the same pool) with ``line`` bound: what the store stamps and filters by."""
    return engine.execution_options(**{LINE_OPTION: line})


def line_of(engine: Engine) -> str:
    """The line bound to ``engine`` by ``with_line``, else this PC's default line."""
    bound = engine.get_execution_options().get(LINE_OPTION)
    return bound if bound else default_line()
