"""How commands print results: one JSON shape for every command, tables that fit the pipe.

``--json`` always prints one JSON array (an object for a command about one thing, like
``results show``), so a script parses every command the same way (``json.load`` or
``jq '.[]'``). Tables go to a console that is the terminal's width on a terminal, and
wide enough off one that a pipe or a file gets whole rows instead of rows folded at
rich's default of 80 columns.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any

import typer
from rich.console import Console

PIPE_WIDTH = 400  # columns a table may use off a terminal unless $COLUMNS says otherwise


def table_console(stderr: bool = False) -> Console:
    """A console for tables: the terminal's width, else $COLUMNS, else ``PIPE_WIDTH``."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPE_WIDTH
    return Console(stderr=stderr, width=width)


def echo_json(value: Sequence[Any] | dict[str, Any]) -> None:
    """``value`` as indented JSON on stdout: the one shape every ``--json`` prints."""
    typer.echo(json.dumps(value, indent=1))
