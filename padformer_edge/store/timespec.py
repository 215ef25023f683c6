"""Times as people type them on a line PC: ISO 8601 or a relative age like ``2h``.

Naive ISO times are taken as UTC, the one zone the database stores; an explicit offset
(``+01:00``, ``Z``) is honoured. Relative ages count back from now.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from padformer_edge.errors import UserError

_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")


def parse_age(text: str, option: str = "--older-than") -> timedelta:
    """``30d`` -> 30 days; units s, m, h, d, w."""
    match = _AGE.match(text)
    if match is None:
        raise UserError(
            f"{option} '{text}' is not an age; write a number and a unit "
            "(s, m, h, d or w), e.g. 30d or 12h."
        )
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def parse_time(text: str, option: str = "--since", now: datetime | None = None) -> datetime:
    """An aware UTC datetime from ISO 8601 or from an age before ``now``."""
    if _AGE.match(text):
        return (now or datetime.now(UTC)) - parse_age(text, option)
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError as err:
        raise UserError(
            f"{option} '{text}' is neither an ISO 8601 time "
            "(2026-05-01T08:00, UTC unless it has an offset) nor an age like 2h or 7d."
        ) from err
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
