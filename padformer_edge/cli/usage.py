"""Usage mistakes as one line, and help text that reads as written.

Typer 0.29 bundles its own copy of click (``typer._click``) whose exceptions are not
``click.ClickException``: catching only the standalone package lets a mistyped command
escape as a traceback. Both bases are collected here, whichever are importable, so a
missing option, an unknown command or option and a bad value all become one sentence
naming the command and where to read its usage.

Help is tidied once, on the built click command tree: on/off flags lose the ``<bool>``
tag (they take no value), and the line breaks of a docstring's source are joined within
each paragraph so that ``--help`` never breaks a sentence where the source line ended;
the terminal wraps it instead.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

USAGE_HINT = "run '{path} --help' for its usage"


def click_errors() -> tuple[type[Exception], ...]:
    """``ClickException`` of typer's bundled click and of the click package, if present."""
    found: list[type[Exception]] = []
    for module in ("typer._click.exceptions", "click.exceptions"):
        try:
            base = importlib.import_module(module).ClickException
        except (ImportError, AttributeError):
            continue
        if base not in found:
            found.append(base)
    return tuple(found)


def usage_line(exc: Exception) -> str:
    """The error as one line: the command it concerns, what is wrong, where help is."""
    message = " ".join(str(getattr(exc, "format_message", lambda: str(exc))()).split())
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return message
    path, message = ctx.command_path, message.rstrip(". ")
    hint = USAGE_HINT.format(path=path)
    if message.endswith(("?", "!")):  # "No such command 'detcet'. Did you mean 'detect'?"
        return f"{path}: {message} {hint[0].upper()}{hint[1:]}."
    return f"{path}: {message}; {hint}."


def tidy_help(command: Any) -> None:
    """Untyped flags and unwrapped paragraphs in ``command`` and every subcommand."""
    if isinstance(getattr(command, "help", None), str):
        command.help = unwrap(command.help)
    for param in getattr(command, "params", []):
        _untyped(param)
    if hasattr(command, "get_help_option"):  # --help is built per call, not in params
        build = command.get_help_option
        command.get_help_option = lambda ctx, build=build: _untyped(build(ctx))
    for sub in getattr(command, "commands", {}).values():
        tidy_help(sub)


def _untyped(param: Any) -> Any:
    if getattr(param, "is_flag", False) and getattr(param, "metavar", None) is None:
        param.metavar = ""
    return param


def unwrap(text: str) -> str:
    """Each paragraph of a docstring on one line (paragraphs stay apart)."""
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs)
