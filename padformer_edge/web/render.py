"""HTML from Jinja2 templates with autoescaping on for every template.

Camera names, file names and error texts come from camera folders and sinks nobody here
controls, so nothing reaches a page unescaped; the templates never use ``|safe``.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined


def when(value: str | datetime | None) -> str:
    """``2026-05-01 08:00:03Z``: seconds are enough on a page; exports keep the rest."""
    if value is None:
        return "-"
    text = value.isoformat() if isinstance(value, datetime) else str(value)
    return text[:19].replace("T", " ") + "Z"


def number(value: float | None) -> str:
    return "-" if value is None else f"{value:.4g}"


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
