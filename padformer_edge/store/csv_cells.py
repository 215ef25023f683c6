"""CSV that a spreadsheet opens as data: text cells that would start a formula are defused.

Excel, LibreOffice and Google Sheets read a cell beginning with ``=``, ``+``, ``-`` or
``@`` as a formula (and a leading tab or carriage return can hide such a start), so a
reviewer name or note like ``=HYPERLINK("http://x", "open")`` in an export would run
in the spreadsheet of whoever opens it. Every CSV the project writes (``/history.csv``,
``results export``, ``results list --csv``) goes through ``SafeDictWriter``: such a text
cell gets a leading apostrophe, which spreadsheets show as text and do not evaluate.
Only ``str`` values are touched; scores, ids and sizes are numbers and stay numbers
(a negative score is written as ``-0.5``, not defused).

A line break inside a cell is a second way in (issue 51's audit): a note ``ok<CR>=cmd|...``
written with ``lineterminator="\n"`` left the lone carriage return unquoted, and a
spreadsheet, which breaks records on CR too, started a new record at ``=cmd``. Even
quoted, a reader that splits lines first sees a line beginning ``=cmd``. So inside a text
cell every line break becomes one LF, and every line of the cell, not only its first, is
defused the same way; a cell holding an LF is always quoted, because the writer insists
on a terminator containing LF. A line break is whatever Python's ``str.splitlines``
breaks on (issue 60: VT, FF, FS, GS, RS, NEL, U+2028 and U+2029 as well as CR and LF),
the split a reader of the file is likeliest to make; the cell is split by that method
itself, so the two cannot disagree.

The JSON exports need none of this: ``json.dumps`` (as every JSON export writes, ASCII
only) escapes each of those characters, so a JSON file holds no line break inside a
value.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _defused(line: str) -> str:
    return "'" + line if line.startswith(FORMULA_STARTS) else line


def cell_lines(value: str) -> list[str]:
    """The lines of ``value`` as ``str.splitlines`` breaks them, with an empty last line
    after a break that ends the text (which ``splitlines`` alone would drop): the
    ``.`` added first is no line break, so the last part always ends with it."""
    lines = (value + ".").splitlines()
    lines[-1] = lines[-1][:-1]
    return lines


def safe_cell(value: Any) -> Any:
    """``value`` with its line breaks made LF and an apostrophe in front of each of its
    lines a spreadsheet would evaluate, when it is text; anything else as it is."""
    if not isinstance(value, str):
        return value
    return "\n".join(_defused(line) for line in cell_lines(value))


class SafeDictWriter(csv.DictWriter):
    """``csv.DictWriter`` whose rows pass through ``safe_cell``, with a line terminator
    that holds LF (``\n`` or the default ``\r\n``), so the csv module quotes every cell
    with a line break in it."""

    def __init__(self, f: Any, fieldnames: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(f, fieldnames, *args, **kwargs)
        if "\n" not in self.writer.dialect.lineterminator:
            raise ValueError("SafeDictWriter needs a line terminator holding LF")

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({k: safe_cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts: Any) -> None:
        for row in rowdicts:
            self.writerow(row)
