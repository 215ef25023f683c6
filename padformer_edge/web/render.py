"""HTML from Jinja2 templates with autoescaping on for every template.

Camera names, file names and error texts come from camera folders and sinks nobody here
controls, so nothing reaches a page unescaped; the templates never use ``|safe``.
Static files are read from the package once, into a dict keyed by name: no path from a
URL ever reaches the file system.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined

STATIC_TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}


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


@cache
def static_files() -> dict[str, tuple[bytes, str]]:
    folder = resources.files("padformer_edge.web") / "static"
    out = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if suffix in STATIC_TYPES:
            out[entry.name] = (entry.read_bytes(), STATIC_TYPES[suffix])
    return out
