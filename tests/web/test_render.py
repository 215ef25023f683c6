"""How the page writes numbers and times: plain digits, local time with its zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from padformer_edge.web.render import number, when


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (11080.3, "11080"),  # once rendered as 1.108e+04
        (1.108e4, "11080"),
        (0.012345, "0.01235"),
        (7.5, "7.5"),
        (2.0, "2"),
        (1e-7, "0.0000001"),
        (-0.0, "0"),
        (-42.25, "-42.25"),
        (None, "-"),
    ],
)
def test_numbers_are_written_out_without_an_exponent(value: float | None, shown: str) -> None:
    assert number(value) == shown
    assert "e" not in shown


def test_times_are_local_with_the_zone_named() -> None:
    stored = "2026-05-01T08:00:03.123456+00:00"
    assert when(stored, ZoneInfo("Europe/Berlin")) == "2026-05-01 10:00:03 CEST"
    assert when(stored, ZoneInfo("Asia/Kolkata")) == "2026-05-01 13:30:03 IST"
    assert when(stored, UTC) == "2026-05-01 08:00:03 UTC"
    winter = datetime(2026, 1, 1, 8, 0, 3, tzinfo=UTC)
    assert when(winter, ZoneInfo("Europe/Berlin")) == "2026-01-01 09:00:03 CET"


def test_a_zone_without_an_abbreviation_shows_its_offset() -> None:
    stored = "2026-05-01T08:00:03+00:00"
    assert when(stored, ZoneInfo("America/Sao_Paulo")) == "2026-05-01 05:00:03 UTC-03:00"
    odd = timezone(timedelta(hours=5, minutes=45))  # tzname() is "UTC+05:45"
    assert when(stored, odd) == "2026-05-01 13:45:03 UTC+05:45"


def test_a_time_stored_without_a_zone_is_utc() -> None:
    assert when("2026-05-01T08:00:03", ZoneInfo("Europe/Berlin")) == "2026-05-01 10:00:03 CEST"
    assert when(None) == "-"
