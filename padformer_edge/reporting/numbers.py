"""Numbers for people: four significant digits, written out in full.

Python's ``{:.4g}`` switches to exponent form from 10,000 up (``1.108e+04``), which an
operator misreads at a glance; the page and the heatmap label share this one rule so a
score reads the same on both.
"""

from __future__ import annotations

import math
from decimal import Decimal


def plain(value: float) -> str:
    """``11080``, ``0.01235``, ``7.5``: rounded to four significant digits, no exponent."""
    if not math.isfinite(value):
        return str(value)
    text = format(Decimal(f"{value:.4g}"), "f")
    return "0" if text in ("-0", "0.0", "-0.0") else text
