"""Options that take one of a fixed set of words.

Each is declared once from the tuple its owner already keeps (a ``StrEnum`` or a
``Literal``), so ``--help`` lists the words (``[csv|jsonl]``) and a wrong one is refused
while the command line is parsed, before a database opens or a model loads, with the
project's usual single sentence (a ``UserError``: one line, exit status 2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import typer

from padformer_edge.errors import UserError


def choice_option(
    default: str | None,
    flag: str,
    values: Iterable[str] | Callable[[], Iterable[str]],
    *,
    help: str,
    refusal: str = "{flag} '{value}' is not one of its choices",
) -> Any:
    """A ``typer.Option`` for ``flag`` accepting only ``values``: a callable is asked
    when the command line is parsed, so words added after the option was declared (a
    scoring method registered at run time) are accepted too; ``--help`` lists those it
    gave when declared.

    ``refusal`` is the first half of the error sentence (``{flag}`` and ``{value}`` are
    filled in); the list of choices completes it.
    """

    def words() -> tuple[str, ...]:
        asked = values if isinstance(values, Iterable) else values()  # a StrEnum iterates
        return tuple(str(value) for value in asked)

    names = words()

    def parse(text: str) -> str:
        names = words()
        if text in names:
            return text
        first = refusal.format(flag=flag, value=text)
        raise UserError(f"{first}; choose one of {', '.join(names)}.")

    return typer.Option(default, flag, parser=parse, metavar=f"[{'|'.join(names)}]", help=help)
