"""Which lines a viewer may see: every line, or the lines their user is limited to.

A plant database holds every line's rows, and one page serves the plant. A user given
lines (``padformer-edge users lines NAME --line L``) sees and reviews only those lines'
rows: lists and exports are filtered in SQL (``lines_of`` handed to the query), and a
row reached by its id (a detail page, a picture, a review or retry posted to its URL)
of another line is answered as if it did not exist, so an id does not tell whether
another line has it. Everyone else (a user with no lines, the shared token, the page
before users exist) sees every line.
"""

from __future__ import annotations

from starlette.requests import Request

from padformer_edge.web.responses import lines_of

__all__ = ["lines_of", "sees", "visible"]


def sees(request: Request, line: str | None) -> bool:
    """True when this viewer may see a row of ``line`` (``None``: no such row)."""
    if line is None:
        return False
    lines = lines_of(request)
    return lines is None or line in lines


def visible(request: Request, names: list[str]) -> list[str]:
    """``names`` (lines) this viewer may see, in their order."""
    lines = lines_of(request)
    return names if lines is None else [n for n in names if n in lines]
