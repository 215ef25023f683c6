"""CSV that a spreadsheet opens as data: text cells that would start a formula are defused.

Excel, LibreOffice and Google Sheets read a cell beginning with ``=``, ``+``, ``-`` or
``@`` as a formula (and a leading tab or carriage return can hide such a start), so a
reviewer name or note like ``=HYPERLINK("http://x", "open")`` in an export would run
in the spreadsheet of whoever opens it. Every CSV the project writes (``/history.csv``,
``results export``, ``results list --csv``) goes through ``SafeDictWriter``: such a text
cell gets a leading apostrophe, which spreadsheets show as text and do not evaluate.
Only ``str`` values are touched; scores, ids and sizes are numbers and stay numbers
(a negative score is written as ``-0.5``, not defused).
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from typing import Any

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """``value`` with an apostrophe in front when it is text a spreadsheet would evaluate."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


class SafeDictWriter(csv.DictWriter):
    """``csv.DictWriter`` whose rows pass through ``safe_cell``."""

    def writerow(self, rowdict: Mapping[str, Any]) -> Any:
        return super().writerow({k: safe_cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts: Any) -> None:
        for row in rowdicts:
            self.writerow(row)
