"""The store's words, without SQLAlchemy: inspection and alert states, review verdicts,
reference candidates' states and origins, users' roles, groupings and export formats.

The CLI offers these as option choices, so every command module needs them to build its
``--help``; keeping them apart from the tables lets ``--help`` and ``profile list`` start
without importing SQLAlchemy and Alembic.
"""

from __future__ import annotations

import enum
from typing import Literal


class Status(enum.StrEnum):
    """Life of one camera file: queued, being inspected, and one of four outcomes
    (``no_part``: a framed profile found no part in the frame, so nothing was scored)."""

    pending = "pending"
    processing = "processing"
    done = "done"
    failed = "failed"
    skipped = "skipped"
    no_part = "no_part"


class AlertState(enum.StrEnum):
    pending = "pending"
    sent = "sent"
    dead = "dead"


class ReviewVerdict(enum.StrEnum):
    """What an operator said about an inspection after looking at the part."""

    true_defect = "true_defect"
    false_alarm = "false_alarm"


class CandidateState(enum.StrEnum):
    """Where a reference candidate stands: waiting for an engineer, or decided."""

    pending = "pending"
    approved = "approved"
    rejected = "rejected"


class CandidateOrigin(enum.StrEnum):
    """Why an inspection became a reference candidate: an operator reviewed it as good
    (a false alarm), or it scored far below the threshold on a profile that opted in."""

    reviewed = "reviewed"
    confident = "confident"


class Role(enum.StrEnum):
    """What a named user may do on the page and the CLI: an operator reviews
    inspections; an engineer reviews too, and applies recalibrations."""

    operator = "operator"
    engineer = "engineer"


# What a history filter may ask about reviews: a verdict, or whether there is one at all.
REVIEW_FILTERS = ("true_defect", "false_alarm", "reviewed", "unreviewed")
ReviewFilter = Literal["true_defect", "false_alarm", "reviewed", "unreviewed"]
GroupBy = Literal["all", "line", "camera", "product", "hour", "day"]
ExportFormat = Literal["csv", "jsonl"]
