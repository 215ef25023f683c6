"""Operators' reviews: saving a verdict on an inspection, counting them, and the reviewed
scores a profile can be recalibrated from.

``reviews`` holds the latest verdict of each inspection (what history, exports and a
recalibration read); every verdict given is also a new row of ``review_history``, in
the same transaction, so a changed verdict keeps the earlier one with who gave it and
when. The replaced verdict is returned so the caller can log it. Once named users exist
(``users``) a review must be signed by one. Only an inspection the detector finished
(``done``) can be reviewed: a failed or skipped file has no score, so a verdict on it
would say nothing about the threshold.

A false-alarm verdict says the part is good, so it also offers the part's picture as a
reference candidate of its profile (``candidates.propose``); a true-defect verdict
rejects any candidate made from the same inspection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, func, insert, select
from sqlalchemy.orm import Session

from padformer_edge.errors import UserError
from padformer_edge.store.candidates import propose, withdraw
from padformer_edge.store.engine import reading
from padformer_edge.store.models import Inspection, Review, ReviewVerdict, Status, utc_now
from padformer_edge.store.tables import review_history
from padformer_edge.store.users import reviewer_of
from padformer_edge.store.vocabulary import CandidateOrigin

MAX_NOTE_CHARS = 2000
MAX_REVIEWER_CHARS = 128


@dataclass(frozen=True)
class SavedReview:
    """The review as stored, and the verdict it replaced (``None`` for a first review)."""

    inspection_id: int
    verdict: ReviewVerdict
    note: str | None
    reviewer: str
    reviewed_at: datetime
    replaced: ReviewVerdict | None
    candidate: int | None = None
    """The reference candidate this review made (a first false-alarm verdict on a part
    whose picture is still as scored), else None."""
    withdrawn: int = 0
    """Candidates of this inspection rejected because it was reviewed as a true defect."""


def _clean(note: str | None, reviewer: str) -> tuple[str | None, str]:
    note = (note or "").strip() or None
    reviewer = reviewer.strip()
    if note is not None and len(note) > MAX_NOTE_CHARS:
        raise UserError(f"the review note has {len(note)} characters; keep it to {MAX_NOTE_CHARS}.")
    if not reviewer:
        raise UserError("a review needs a reviewer name; give who looked at the part.")
    if len(reviewer) > MAX_REVIEWER_CHARS:
        raise UserError(
            f"the reviewer name has {len(reviewer)} characters; keep it to {MAX_REVIEWER_CHARS}."
        )
    return note, reviewer


def save_review(
    engine: Engine,
    inspection_id: int,
    verdict: ReviewVerdict,
    *,
    reviewer: str,
    note: str | None = None,
    now: datetime | None = None,
) -> SavedReview:
    """Record the review of one finished inspection as its latest and in its history,
    in one transaction; with users, ``reviewer`` must name one."""
    note, reviewer = _clean(note, reviewer)
    with Session(engine, expire_on_commit=False) as session, session.begin():
        reviewer = reviewer_of(session.connection(), reviewer)
        row = session.get(Inspection, inspection_id)
        if row is None:
            raise UserError(
                f"there is no inspection {inspection_id}; 'results list' shows the ids."
            )
        if row.status is not Status.done:
            raise UserError(
                f"inspection {inspection_id} is {row.status.value}, not inspected; only "
                "an inspected image (with a score) can be reviewed."
            )
        review = session.get(Review, inspection_id)
        replaced = None if review is None else review.verdict
        if review is None:  # the review belongs to the line of the part it judges
            review = Review(inspection_id=inspection_id, line=row.line)
            session.add(review)
        review.verdict, review.note, review.reviewer = verdict, note, reviewer
        review.reviewed_at = now or utc_now()
        session.execute(insert(review_history).values(
            inspection_id=inspection_id, line=row.line, verdict=verdict, note=note,
            reviewer=reviewer, reviewed_at=review.reviewed_at,
        ))  # fmt: skip
        withdrawn = 0
        if verdict is ReviewVerdict.true_defect:
            withdrawn = withdraw(session.connection(), inspection_id, reviewer)
    candidate = None
    if verdict is ReviewVerdict.false_alarm:  # a good part: offered as a reference
        made = propose(engine, inspection_id, CandidateOrigin.reviewed, by=reviewer)
        candidate = None if made is None else made.id
    return SavedReview(inspection_id, verdict, note, reviewer, review.reviewed_at, replaced,
                       candidate, withdrawn)  # fmt: skip


def review_counts(conn: Connection) -> dict[tuple[str, str, str], int]:
    """Reviews per (line, product, verdict), for ``/metrics``; the reviews table is small
    and each row finds its inspection by primary key."""
    statement = (
        select(Review.line, Inspection.product, Review.verdict, func.count())
        .join(Inspection, Inspection.id == Review.inspection_id)
        .group_by(Review.line, Inspection.product, Review.verdict)
    )
    return {
        (str(line), str(product), ReviewVerdict(verdict).value): int(n)
        for line, product, verdict, n in conn.execute(statement)
    }


@dataclass(frozen=True)
class ReviewedInspection:
    """One reviewed, scored inspection of a profile: what a recalibration reads and
    lists, so an engineer can see which reviews moved the threshold."""

    inspection_id: int
    verdict: ReviewVerdict
    score: float
    model_sha256: str | None
    reviewer: str
    reviewed_at: datetime


def reviewed_inspections(engine: Engine, product: str) -> list[ReviewedInspection]:
    """Every reviewed inspection of ``product`` that has a score, oldest first; the
    caller decides which model's scores count (another checkpoint's are on another
    scale)."""
    statement = (
        select(
            Review.inspection_id, Review.verdict, Inspection.score, Inspection.model_sha256,
            Review.reviewer, Review.reviewed_at,
        )
        .join(Inspection, Inspection.id == Review.inspection_id)
        .where(Inspection.product == product, Inspection.score.is_not(None))
        .order_by(Inspection.id)
    )  # fmt: skip
    with reading(engine) as conn:
        return [
            ReviewedInspection(int(i), ReviewVerdict(v), float(score), sha, who, at)
            for i, v, score, sha, who, at in conn.execute(statement)
        ]


@dataclass(frozen=True)
class PastReview:
    """One verdict given on an inspection, replaced later or still the latest."""

    verdict: ReviewVerdict
    note: str | None
    reviewer: str
    reviewed_at: datetime


def reviews_of(conn: Connection, inspection_id: int) -> list[PastReview]:
    """Every verdict given on ``inspection_id``, newest first (the first is the one
    ``reviews`` holds)."""
    rh = review_history.c
    statement = (
        select(rh.verdict, rh.note, rh.reviewer, rh.reviewed_at)
        .where(rh.inspection_id == inspection_id)
        .order_by(rh.id.desc())
    )
    return [PastReview(ReviewVerdict(v), n, r, at) for v, n, r, at in conn.execute(statement)]
