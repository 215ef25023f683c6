"""HTML from Jinja2 templates with autoescaping on for every template.

Camera names, file names and error texts come from camera folders and sinks nobody here
controls, so nothing reaches a page unescaped; the templates never use ``|safe``.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

from padformer_edge.reporting.numbers import plain


def when(value: str | datetime | None, zone: tzinfo | None = None) -> str:
    """``2026-05-01 10:00:03 CEST``: the time in the zone of the machine the page runs on
    (``zone`` in tests), with the zone named, because the operator reading the page thinks
    in the line's local time and a bare clock could be taken for either. Seconds are enough
    on a page; exports keep the full ISO value. A time stored without a zone is UTC, as the
    store writes it."""
    if value is None or value == "":
        return "-"
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    local = moment.astimezone(zone)
    name = local.tzname() or ""
    if not name or name[0] in "+-":  # a zone without an abbreviation: show its offset
        name = "UTC" + local.strftime("%z")[:3] + ":" + local.strftime("%z")[3:]
        name = "UTC" if name == "UTC+00:00" else name
    return f"{local:%Y-%m-%d %H:%M:%S} {name}"


def number(value: float | None) -> str:
    """Four significant digits written out in full (``11080``, ``0.0123``), never in
    exponent form (``1.108e+04``), which an operator misreads at a glance."""
    return "-" if value is None else plain(value)


@cache
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("padformer_edge.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = when
    env.filters["number"] = number
    return env


def render(template: str, **context: Any) -> bytes:
    return environment().get_template(template).render(**context).encode("utf-8")
