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
    try:
        return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    except OverflowError as err:
        raise UserError(
            f"{option} '{text}' is too long an age; use a shorter one, e.g. 30d."
        ) from err


def parse_time(text: str, option: str = "--since", now: datetime | None = None) -> datetime:
    """An aware UTC datetime from ISO 8601 or from an age before ``now``."""
    if _AGE.match(text):
        try:
            return (now or datetime.now(UTC)) - parse_age(text, option)
        except OverflowError as err:
            raise UserError(
                f"{option} '{text}' reaches back before the year 1; use a shorter age."
            ) from err
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError as err:
        raise UserError(
            f"{option} '{text}' is neither an ISO 8601 time "
            "(2026-05-01T08:00, UTC unless it has an offset) nor an age like 2h or 7d."
        ) from err
    try:
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError as err:  # 0001-01-01T00:00+01:00 is before the year 1 in UTC
        raise UserError(f"{option} '{text}' is outside the years 1 to 9999 in UTC.") from err
