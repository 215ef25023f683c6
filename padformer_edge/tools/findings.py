"""One checked thing of ``doctor``'s list, in its own module so that each check's module
(the configuration's, the device's) can build findings without importing the others."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One checked thing: what it is, whether it is fine, and what was seen or the fix."""

    subject: str
    ok: bool
    detail: str
