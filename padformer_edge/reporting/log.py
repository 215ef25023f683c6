"""structlog set-up shared by every command and the daemon.

A person at a terminal gets coloured key=value lines; anything else (systemd's journal,
a pipe, a file) gets one JSON object per line so that logs can be searched and shipped
without parsing prose. One exception (issue 51): a one-shot command whose stdout and
stderr are one stream that is no terminal (``2>&1 | tee``, a CI log) is read by a
person, and JSON objects between its tables and sentences only get in the way, so its
log lines are plain key=value lines there; the services (``watch``, ``serve``) keep JSON,
since systemd gives them one stream for the journal.

Every log line first flushes stdout, so that in such a merged stream a line comes after
whatever the command printed before it, never ahead of a buffered table.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import threading
from typing import Literal

import structlog

LogFormat = Literal["auto", "console", "json"]


def one_stream() -> bool:
    """Whether stdout and stderr are the same file, pipe or socket (``2>&1``)."""
    try:
        out, err = os.fstat(sys.stdout.fileno()), os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return False  # a stream with no file behind it (a test's capture)
    return (out.st_dev, out.st_ino) == (err.st_dev, err.st_ino)


def auto_format(service: bool = False) -> LogFormat:
    """``console`` at a terminal, and for a one-shot command whose two streams are one;
    ``json`` everywhere else (see the module docstring)."""
    if sys.stderr.isatty() or (not service and one_stream()):
        return "console"
    return "json"


class _AfterStdout:
    """stderr, written to only once stdout's buffer is out: log lines keep their place
    after what the command printed before them when both streams end in one place.

    One instance (``_LINES``) takes every log line, each in one ``write`` under its lock:
    the daemon logs from several threads, and lines written in two pieces each (structlog's
    ``PrintLogger`` prints the text, then the newline, under a lock of its own instance)
    ran into each other as ``{...}{...}`` on one line, which a reader of the JSON lines
    (the chaos benchmark waiting for ``daemon.ready``) could not parse. Re-entrant, for a
    signal handler that logs while its thread is writing a line."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def write(self, text: str) -> int:
        with self._lock:
            with contextlib.suppress(OSError, ValueError, AttributeError):  # closed, broken,
                sys.stdout.flush()  # or None
            written = sys.stderr.write(text)
            sys.stderr.flush()
            return written

    def flush(self) -> None:
        sys.stderr.flush()


_LINES = _AfterStdout()


class _LineLogger:
    """structlog's output end: each event is one whole line, in one write to ``_LINES``
    (to whatever ``sys.stderr`` is at that moment)."""

    def msg(self, message: str) -> None:
        _LINES.write(message + "\n")

    log = debug = info = warn = warning = msg
    err = error = exception = critical = fatal = failure = msg


def configure_logging(fmt: LogFormat = "auto", level: str = "INFO", service: bool = False) -> None:
    """Route structlog (and stdlib logging) to stderr in the chosen format; ``service``
    (``watch``, ``serve``) keeps ``auto`` at JSON on a merged stream."""
    if fmt == "auto":
        fmt = auto_format(service)
    numeric_level = logging.getLevelName(level.upper())
    if not isinstance(numeric_level, int):
        numeric_level = logging.INFO
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]
    renderer = (
        structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[*shared, structlog.processors.format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=_current_stderr_logger,
        cache_logger_on_first_use=False,
    )
    # Third-party libraries log through stdlib logging and warn through ``warnings``;
    # both are rendered like our own events (JSON off a terminal), not as loose text.
    handler = logging.StreamHandler(_LINES)  # type: ignore[arg-type]
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        )
    )
    # Libraries' INFO chatter (Alembic lists its plugins on import) is not the user's
    # business: their warnings come through, and everything with --log-level DEBUG.
    library_level = (
        numeric_level if numeric_level < logging.INFO else max(numeric_level, logging.WARNING)
    )
    logging.basicConfig(level=library_level, handlers=[handler])
    logging.captureWarnings(True)


def _current_stderr_logger(*_args: object) -> _LineLogger:
    """Write to whatever ``sys.stderr`` is when the event is logged, not when configured
    (after flushing stdout, ``_AfterStdout``).

    Test runners and the daemon's supervisor may swap the stream; a logger bound to the
    old object would write into a closed file.
    """
    return _LineLogger()


def get_logger(name: str | None = None) -> structlog.typing.FilteringBoundLogger:
    """A lazy structlog logger; ``name`` is bound as ``component`` so events can be filtered.

    The proxy resolves its configuration on first use, so a module-level logger still
    honours the ``--log-format`` and ``--log-level`` chosen later by the CLI.
    """
    return structlog.get_logger(component=name) if name else structlog.get_logger()
