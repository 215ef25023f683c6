"""structlog set-up shared by every command and the daemon.

A person at a terminal gets coloured key=value lines; anything else (systemd's journal,
a pipe, a file) gets one JSON object per line so that logs can be searched and shipped
without parsing prose.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal

import structlog

LogFormat = Literal["auto", "console", "json"]


def configure_logging(fmt: LogFormat = "auto", level: str = "INFO") -> None:
    """Route structlog (and stdlib logging) to stderr in the chosen format."""
    if fmt == "auto":
        fmt = "console" if sys.stderr.isatty() else "json"
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
    handler = logging.StreamHandler(sys.stderr)
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


def _current_stderr_logger(*_args: object) -> structlog.PrintLogger:
    """Write to whatever ``sys.stderr`` is when the event is logged, not when configured.

    Test runners and the daemon's supervisor may swap the stream; a logger bound to the
    old object would write into a closed file.
    """
    return structlog.PrintLogger(file=sys.stderr)


def get_logger(name: str | None = None) -> structlog.typing.FilteringBoundLogger:
    """A lazy structlog logger; ``name`` is bound as ``component`` so events can be filtered.

    The proxy resolves its configuration on first use, so a module-level logger still
    honours the ``--log-format`` and ``--log-level`` chosen later by the CLI.
    """
    return structlog.get_logger(component=name) if name else structlog.get_logger()
